import { cutUnits } from '@lore/ai';
import { TextDecoder } from 'node:util';
import { decodeEntities as decodeHtmlEntities } from '@lore/ai/html-text';

/**
 * Reading one fetched web page, without I/O: its charset, and what a crawler needs from its markup (links, the
 * canonical link, robots directives, `<base>`, language). Every scan is linear in the page's length, whatever the
 * markup (unclosed comments, scripts or tags end the scan instead of being searched for again).
 */

export interface PageLink {
  /** Absolute, http(s), fragment removed. */
  url: string;
  /** `rel` names `nofollow`. */
  nofollow: boolean;
}

export interface RobotsDirectives {
  noindex: boolean;
  nofollow: boolean;
}

export interface HtmlFacts {
  links: PageLink[];
  /** The first `<link rel="canonical">`, absolute, or null. */
  canonical: string | null;
  /** The content of every `<meta name="robots">` and `<meta name="<agent>">` (see `robotsDirectives`). */
  robotsMeta: string[];
  /** `<html lang>`, or null. */
  lang: string | null;
}

/** Links read from one page at most: a page with more is a link farm, not documentation. */
export const MAX_LINKS_PER_PAGE = 5_000;

/** The bytes of a page decoded: a byte-order mark first, then the header's charset, then `<meta>` (HTML), then UTF-8. */
export function decodePage(body: Buffer, headerCharset: string | null, html: boolean): { text: string; charset: string } {
  const bom = byteOrderMark(body);
  const label = bom ?? known(headerCharset) ?? (html ? known(sniffMetaCharset(body)) : null) ?? 'utf-8';
  const decoder = new TextDecoder(label);
  return { text: decoder.decode(body), charset: decoder.encoding };
}

function byteOrderMark(body: Buffer): string | null {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  if (body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  return null;
}

/** The label if the platform's decoder knows it; UTF-16 named in a header or `<meta>` of ASCII bytes is a lie. */
function known(label: string | null): string | null {
  if (!label) return null;
  try {
    const encoding = new TextDecoder(label.trim()).encoding;
    return encoding.startsWith('utf-16') ? 'utf-8' : encoding;
  } catch {
    return null;
  }
}

/** `<meta charset>` or `<meta http-equiv="content-type" content="…; charset=…">` in the first 1024 bytes (the HTML prescan). */
export function sniffMetaCharset(body: Buffer): string | null {
  const head = body.subarray(0, 1024).toString('latin1');
  for (const m of head.matchAll(/<meta\b[^>]*>/gi)) {
    const attrs = parseAttributes(m[0]);
    const charset = attrs.get('charset');
    if (charset) return charset.trim();
    if ((attrs.get('http-equiv') ?? '').toLowerCase() === 'content-type') {
      const inContent = /charset\s*=\s*["']?([^"';\s]+)/i.exec(attrs.get('content') ?? '');
      if (inContent) return inContent[1]!;
    }
  }
  return null;
}

/** Tags whose content is not markup a crawler reads (and may hold `<a>` text that is no link). */
const RAW_TEXT = new Set(['script', 'style', 'template', 'textarea', 'title', 'xmp']);
const TAG_NAME = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)/y;

/**
 * Calls `visit` for every opening tag named in `names`, in document order, skipping comments and raw-text
 * elements. Linear: every search starts where the last one ended, and an unclosed comment or raw-text element
 * ends the scan (a browser would treat the rest as its content).
 */
export function scanTags(html: string, names: ReadonlySet<string>, visit: (name: string, attrs: Map<string, string>) => boolean | void): void {
  let pos = 0;
  for (;;) {
    const lt = html.indexOf('<', pos);
    if (lt < 0) return;
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4);
      if (end < 0) return;
      pos = end + 3;
      continue;
    }
    TAG_NAME.lastIndex = lt;
    const m = TAG_NAME.exec(html);
    if (!m) {
      pos = lt + 1;
      continue;
    }
    const gt = html.indexOf('>', lt);
    if (gt < 0) return;
    const closing = m[1] === '/';
    const name = m[2]!.toLowerCase();
    pos = gt + 1;
    if (closing) continue;
    if (names.has(name) && visit(name, parseAttributes(html.slice(lt + m[0].length, gt))) === false) return;
    if (RAW_TEXT.has(name)) {
      const close = new RegExp(`</${name}\\s*>`, 'gi');
      close.lastIndex = pos;
      const c = close.exec(html);
      if (!c) return;
      pos = c.index + c[0].length;
    }
  }
}

const ATTRIBUTE = /([^\s"'<>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;

/** Attributes of a tag (the text after its name), names lower-cased, entities decoded; the first of a name wins. */
export function parseAttributes(tag: string): Map<string, string> {
  const attrs = new Map<string, string>();
  for (const m of tag.matchAll(ATTRIBUTE)) {
    const name = m[1]!.toLowerCase();
    if (!attrs.has(name)) attrs.set(name, decodeHtmlEntities(m[2] ?? m[3] ?? m[4] ?? ''));
  }
  return attrs;
}

const FACT_TAGS = new Set(['a', 'area', 'link', 'meta', 'base', 'html']);

/**
 * What a crawler reads from a page's markup. `agent` is the crawler's product token: `<meta name="lorebot">`
 * speaks to it as `<meta name="robots">` does to every crawler.
 */
export function readHtml(html: string, pageUrl: string, agent: string): HtmlFacts {
  const links: PageLink[] = [];
  const robotsValues: string[] = [];
  let base = pageUrl;
  let baseSeen = false;
  let canonical: string | null = null;
  let lang: string | null = null;
  const me = agent.toLowerCase();
  scanTags(html, FACT_TAGS, (name, attrs) => {
    if (name === 'html') {
      lang ??= attrs.get('lang')?.trim() || null;
    } else if (name === 'base') {
      // Only the first <base href> counts, and only when it is a usable address.
      const href = attrs.get('href');
      if (!baseSeen && href !== undefined) {
        baseSeen = true;
        const resolved = absoluteUrl(href, pageUrl);
        if (resolved) base = resolved;
      }
    } else if (name === 'meta') {
      const metaName = (attrs.get('name') ?? '').trim().toLowerCase();
      if (metaName === 'robots' || metaName === me) robotsValues.push(attrs.get('content') ?? '');
    } else if (name === 'link') {
      const rel = relTokens(attrs.get('rel'));
      const href = attrs.get('href');
      if (canonical === null && rel.includes('canonical') && href !== undefined) canonical = absoluteUrl(href, base);
    } else if (links.length < MAX_LINKS_PER_PAGE) {
      const href = attrs.get('href');
      const url = href === undefined ? null : absoluteUrl(href, base);
      if (url) links.push({ url, nofollow: relTokens(attrs.get('rel')).includes('nofollow') });
    }
  });
  return { links, canonical, robotsMeta: robotsValues, lang };
}

function relTokens(rel: string | undefined): string[] {
  return (rel ?? '').toLowerCase().split(/\s+/).filter(Boolean);
}

/** `href` resolved against `base`: http(s) only, fragment removed, or null. */
export function absoluteUrl(href: string, base: string): string | null {
  let url: URL;
  try {
    url = new URL(href.trim(), base);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  url.hash = '';
  return url.href;
}

/** Directives a robots value may carry that themselves contain a colon (not an agent prefix). */
const COLON_DIRECTIVES = new Set(['unavailable_after', 'max-snippet', 'max-image-preview', 'max-video-preview']);

/**
 * `noindex` / `nofollow` from `<meta name="robots">` values (already for this agent) and `X-Robots-Tag` header
 * values, which may scope what follows to one agent (`otherbot: noindex` is not for us). `none` is both.
 */
export function robotsDirectives(metaValues: readonly string[], headerValues: readonly string[], agent?: string): RobotsDirectives {
  const out: RobotsDirectives = { noindex: false, nofollow: false };
  const apply = (directive: string) => {
    const d = directive.trim().toLowerCase();
    if (d === 'noindex' || d === 'none') out.noindex = true;
    if (d === 'nofollow' || d === 'none') out.nofollow = true;
  };
  for (const value of metaValues) for (const d of value.split(',')) apply(d);
  const me = agent?.toLowerCase();
  for (const value of headerValues) {
    let forUs = true;
    for (let token of value.split(',')) {
      const scoped = /^\s*([a-z0-9_.-]+)\s*:\s*(.*)$/i.exec(token);
      if (scoped && !COLON_DIRECTIVES.has(scoped[1]!.toLowerCase())) {
        const who = scoped[1]!.toLowerCase();
        forUs = who === '*' || who === me;
        token = scoped[2]!;
      }
      if (forUs) apply(token);
    }
  }
  return out;
}

/** A plain text document's title: its first non-empty line, at most 200 characters; null when it has none. */
export function plainTextTitle(text: string): string | null {
  for (const line of text.split('\n', 50)) {
    const t = line.trim();
    if (t) return t.length > 200 ? `${cutUnits(t, 199)}…` : t;
  }
  return null;
}

/** A title from the URL when the page gives none: its last path segment, decoded, or its host. */
export function titleFromUrl(url: string): string {
  const u = new URL(url);
  const last = u.pathname.split('/').filter(Boolean).pop();
  if (!last) return u.host;
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}
