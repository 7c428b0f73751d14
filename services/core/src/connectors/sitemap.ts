import { decodeEntities as decodeHtmlEntities } from '@lore/ai/html-text';

/**
 * The sitemap protocol (sitemaps.org), without I/O: a `<urlset>` of pages or a `<sitemapindex>` of sitemaps, each
 * entry a `<loc>` and an optional `<lastmod>` (W3C datetime); a plain text sitemap is one URL per line. Tolerant
 * and linear: namespace prefixes are ignored, CDATA and entities are read, an unclosed element ends the list.
 */

export interface SitemapEntry {
  loc: string;
  /** The start of the lastmod: the instant, or the first moment of a date given without a time. */
  lastmod: Date | null;
  /** The latest instant the lastmod can mean: the end of its day (month, year) when it has no time. */
  lastmodLatest: Date | null;
}

export interface ParsedSitemap {
  kind: 'urlset' | 'sitemapindex';
  entries: SitemapEntry[];
}

/** The protocol's limit of entries in one file. */
export const MAX_SITEMAP_ENTRIES = 50_000;

export function parseSitemap(xml: string, maxEntries = MAX_SITEMAP_ENTRIES): ParsedSitemap | null {
  // `<ns:url>` and `<url>` are the same element here.
  const plain = xml.replace(/<(\/?)[A-Za-z_][\w.-]*:(?=[A-Za-z_])/g, '<$1');
  const root = /<(urlset|sitemapindex)(?=[\s>/])/.exec(plain);
  if (!root) return null;
  const kind = root[1] as ParsedSitemap['kind'];
  const entries: SitemapEntry[] = [];
  for (const inner of elements(plain, kind === 'urlset' ? 'url' : 'sitemap', root.index)) {
    if (entries.length >= maxEntries) break;
    const loc = firstElement(inner, 'loc');
    if (!loc) continue;
    const lastmod = parseLastmod(firstElement(inner, 'lastmod') ?? '');
    entries.push({ loc: detached(loc), lastmod: lastmod?.at ?? null, lastmodLatest: lastmod?.latest ?? null });
  }
  return { kind, entries };
}

/**
 * A copy of a string cut from a sitemap's text that does not keep that text alive: a slice of a string may share its
 * parent's memory, and a few URLs of a 50 MB sitemap would otherwise hold all 50 MB for as long as the run lists them.
 */
function detached(value: string): string {
  return Buffer.from(value, 'utf8').toString('utf8');
}

/** A plain text sitemap: every line that is an absolute http(s) URL. */
export function parseTextSitemap(text: string, maxEntries = MAX_SITEMAP_ENTRIES): SitemapEntry[] {
  const entries: SitemapEntry[] = [];
  for (const line of text.split('\n')) {
    if (entries.length >= maxEntries) break;
    const t = line.trim();
    if (/^https?:\/\/\S+$/i.test(t) && URL.canParse(t)) entries.push({ loc: detached(t), lastmod: null, lastmodLatest: null });
  }
  return entries;
}

/** The inner text of each `<name …>…</name>` after `from`, in order; stops at one that is not closed. */
function* elements(xml: string, name: string, from: number): Generator<string> {
  const open = new RegExp(`<${name}(?=[\\s>])[^>]{0,1000}>`, 'g');
  const close = `</${name}>`;
  open.lastIndex = from;
  for (;;) {
    const m = open.exec(xml);
    if (!m) return;
    const start = m.index + m[0].length;
    const end = xml.indexOf(close, start);
    if (end < 0) return;
    yield xml.slice(start, end);
    open.lastIndex = end + close.length;
  }
}

function firstElement(xml: string, name: string): string | null {
  for (const inner of elements(xml, name, 0)) {
    // Longer than any address or date: not a value worth reading (and not worth scanning).
    if (inner.length > 4096) return null;
    const cdata = /^\s*<!\[CDATA\[([\s\S]*?)\]\]>\s*$/.exec(inner);
    const value = (cdata ? cdata[1]! : decodeHtmlEntities(inner)).trim();
    return value || null;
  }
  return null;
}

const W3C = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:?\d{2})?)?)?)?$/;

/**
 * A W3C datetime (`2026-03-02`, `2026-03-02T09:00:00+00:00`, `2026-03`, `2026`): its first instant, and the last
 * instant it can mean (a date alone is the whole day, UTC; a time is itself, to the second). A time without a zone is read as UTC. Null when it is
 * not one.
 */
export function parseLastmod(value: string): { at: Date; latest: Date } | null {
  const m = W3C.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s, , zone] = m;
  const year = Number(y);
  if (h !== undefined) {
    const iso = `${y}-${mo}-${d}T${h}:${mi}:${s ?? '00'}${zone === undefined ? 'Z' : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone}`;
    const at = new Date(iso);
    if (Number.isNaN(at.getTime())) return null;
    // Fractions are dropped: sitemaps and HTTP dates (Last-Modified) are compared to the second.
    const whole = new Date(Math.floor(at.getTime() / 1000) * 1000);
    return { at: whole, latest: whole };
  }
  const month = mo === undefined ? 0 : Number(mo) - 1;
  const day = d === undefined ? 1 : Number(d);
  if (month < 0 || month > 11 || day < 1 || day > 31) return null;
  const at = new Date(Date.UTC(year, month, day));
  if (at.getUTCMonth() !== month) return null;
  const next = d !== undefined ? Date.UTC(year, month, day + 1) : mo !== undefined ? Date.UTC(year, month + 1, 1) : Date.UTC(year + 1, 0, 1);
  return { at, latest: new Date(next - 1) };
}
