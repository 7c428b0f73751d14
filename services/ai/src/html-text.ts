/**
 * HTML to readable text, shared by every service that indexes web pages or uploaded HTML (graph's ingest and
 * extraction, core's web connector source). A tolerant, linear scanner rather than a DOM: no markup can hold the
 * event loop.
 */

/**
 * Named character references: every HTML name for an ASCII character (so `zed&commat;example&period;com` reads as the
 * address it is, for masking as much as for reading), and the common typographic ones. Keys are lower case.
 */
const ENTITIES: Record<string, string> = {
  tab: '\t', newline: '\n', excl: '!', quot: '"', num: '#', dollar: '$', percnt: '%', amp: '&', apos: "'", lpar: '(',
  rpar: ')', ast: '*', midast: '*', plus: '+', comma: ',', period: '.', sol: '/', colon: ':', semi: ';', lt: '<',
  equals: '=', gt: '>', quest: '?', commat: '@', lsqb: '[', lbrack: '[', bsol: '\\', rsqb: ']', rbrack: ']', hat: '^',
  lowbar: '_', underbar: '_', grave: '`', lcub: '{', lbrace: '{', verbar: '|', vert: '|', rcub: '}', rbrace: '}',
  nbsp: ' ', mdash: '—', ndash: '–', hellip: '…', rsquo: '’', lsquo: '‘', rdquo: '”', ldquo: '“', copy: '©', reg: '®', euro: '€', pound: '£',
};

/** Decodes numeric character references and the named ones above; unknown names stay as written. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8});/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

const BLOCK = /^(?:p|div|section|article|header|footer|main|aside|nav|li|ul|ol|table|tr|br|hr|blockquote|pre|dd|dt|dl|figure|figcaption|form|address|h[1-6])$/i;

/** Elements whose content is never text a reader sees. */
const HIDDEN = /<!--|<(script|style|noscript|template|svg|head)\b/gi;

/**
 * Removes comments and hidden elements (with their content) in one pass. An element or comment that is never
 * closed is kept as it is, like before; once a closing tag was not found after some position, it cannot be found
 * after a later one either, so the search is not repeated: every character is scanned a bounded number of times,
 * whatever the markup (a lazy `<!--[\s\S]*?-->` over many unclosed comments took 14 s for 160 KB).
 */
function stripHidden(html: string): string {
  const out: string[] = [];
  const unclosed = new Set<string>();
  let pos = 0;
  for (;;) {
    HIDDEN.lastIndex = pos;
    const m = HIDDEN.exec(html);
    if (!m) break;
    const name = (m[1] ?? '!--').toLowerCase();
    let end = -1;
    if (!unclosed.has(name)) {
      if (name === '!--') {
        const close = html.indexOf('-->', m.index + 4);
        end = close < 0 ? -1 : close + 3;
      } else {
        const tagEnd = html.indexOf('>', m.index);
        if (tagEnd >= 0 && html[tagEnd - 1] === '/' && (name === 'script' || name === 'style')) end = tagEnd + 1;
        else {
          const close = new RegExp(`</${name}\\s*>`, 'gi');
          close.lastIndex = m.index + m[0].length;
          const c = close.exec(html);
          end = c ? c.index + c[0].length : -1;
        }
      }
      if (end < 0) unclosed.add(name);
    }
    if (end < 0) {
      // Never closed: keep the opening as text for the passes below, and go on after it.
      out.push(html.slice(pos, m.index + m[0].length));
      pos = m.index + m[0].length;
    } else {
      out.push(html.slice(pos, m.index), ' ');
      pos = end;
    }
  }
  out.push(html.slice(pos));
  return out.join('');
}

/**
 * Replaces `<…>` (from a `<` to the next `>`) by what `render` returns for it; when `render` returns `null` the `<`
 * is kept as text and the scan goes on after it (so `a < b <i>c</i>` still finds `<i>`). A `<` with no `>` after
 * it stays. The position of the next `>` is remembered, so many `<` before one far `>` cost one scan, not one each.
 */
export function replaceTags(s: string, render: (s: string, lt: number) => string | null): string {
  const out: string[] = [];
  let pos = 0;
  let from = 0;
  let gt = -1;
  for (;;) {
    const lt = s.indexOf('<', from);
    if (lt < 0) break;
    if (gt < lt) gt = s.indexOf('>', lt);
    if (gt < 0) break;
    const replacement = render(s, lt);
    if (replacement === null) {
      from = lt + 1;
      continue;
    }
    out.push(s.slice(pos, lt), replacement);
    pos = gt + 1;
    from = pos;
  }
  out.push(s.slice(pos));
  return out.join('');
}

/** A tag's name right at a `<` (sticky: it reads from `lastIndex` and nowhere else). */
const NAMED_TAG = /<(\/?)([a-zA-Z][a-zA-Z0-9]*)\b/y;

/** The first `<title>`'s text, found without rescanning (see `stripHidden`). */
function findTitle(html: string): string | undefined {
  const open = /<title/i.exec(html);
  if (!open) return undefined;
  const gt = html.indexOf('>', open.index);
  if (gt < 0) return undefined;
  const close = /<\/title>/gi;
  close.lastIndex = gt + 1;
  const c = close.exec(html);
  return c ? html.slice(gt + 1, c.index) : undefined;
}

/** The first `<title>`'s text, entities decoded and spaces collapsed; null without one. Linear. */
export function htmlTitle(html: string): string | null {
  const title = findTitle(html);
  return title ? decodeEntities(title.replace(/\s+/g, ' ').trim()) || null : null;
}

/**
 * The visible text on one line: hidden elements (scripts, styles, comments, head) removed, every tag a space,
 * entities decoded, runs of white space one space. Linear, like every step here.
 */
export function htmlPlainText(html: string): string {
  return decodeEntities(replaceTags(stripHidden(html), () => ' '))
    .replace(/\s+/g, ' ')
    .trim();
}

/** A start tag: where it begins and ends (after its `>`), and the text of its attributes. */
export interface StartTag {
  start: number;
  end: number;
  attrs: string;
}

/**
 * Each `<name …>` start tag (any case), in order. Linear: the search for a tag's `>` goes on after it, so openers
 * inside a tag are not read again, and once no `>` follows there is no later tag either (a regex such as
 * `/<meta\b[^>]*>/g` read to the end of the page from every unclosed `<meta`: quadratic, minutes for 2 MB).
 */
export function* startTags(html: string, name: string): Generator<StartTag> {
  const opener = new RegExp(`<${name}(?=[\\s/>])`, 'gi');
  let from = 0;
  for (;;) {
    opener.lastIndex = from;
    const m = opener.exec(html);
    if (!m) return;
    const gt = html.indexOf('>', m.index);
    if (gt < 0) return;
    yield { start: m.index, end: gt + 1, attrs: html.slice(m.index + m[0].length, gt) };
    from = gt + 1;
  }
}

/**
 * Where the first `</name>` (any case, spaces before `>` allowed) at or after `from` begins, and where it ends; null
 * when there is none (within `within` characters of `from`, when given: then only that window is read). A caller
 * that looks again after a later position without a window must stop at the first null (there is none after it
 * either), which keeps it linear.
 */
export function closingTag(html: string, name: string, from: number, within?: number): { start: number; end: number } | null {
  const close = new RegExp(`</${name}\\s*>`, 'iy');
  // In a window, only the window is searched (indexOf on the whole page would read to its end for every call).
  const text = within === undefined ? html : html.slice(from, from + within);
  const base = within === undefined ? 0 : from;
  for (let lt = text.indexOf('</', from - base); lt >= 0; lt = text.indexOf('</', lt + 2)) {
    close.lastIndex = lt;
    const c = close.exec(text);
    if (c) return { start: base + lt, end: base + lt + c[0].length };
  }
  return null;
}

/**
 * HTML to readable text for indexing: drops scripts, styles, comments and head metadata, keeps headings as
 * Markdown headings (the chunker splits on them), puts block elements on their own lines and list items behind
 * a dash, decodes entities. A tolerant scanner rather than a DOM: malformed markup still yields its text. Every
 * step is linear in the length of the input, so no markup can hold the event loop (this runs in the ingest
 * request as well as for uploads).
 */
export function htmlToText(html: string): { text: string; title: string | null } {
  const title = findTitle(html);
  let s = stripHidden(html);
  // A tag is `<` + name up to the next `>`; what is left between `<` and `>` after that (`<!doctype>`, `</ >`) goes.
  s = replaceTags(s, (text, lt) => {
    NAMED_TAG.lastIndex = lt;
    const m = NAMED_TAG.exec(text);
    if (!m) return null;
    const close = m[1] ?? '';
    const n = (m[2] ?? '').toLowerCase();
    if (!close && /^h[1-6]$/.test(n)) return `\n\n${'#'.repeat(Number(n[1]))} `;
    if (n === 'li') return close ? '' : '\n- ';
    if (n === 'td' || n === 'th') return ' | ';
    return BLOCK.test(n) ? '\n\n' : '';
  });
  s = decodeEntities(replaceTags(s, () => ''));
  const text = s
    .split('\n')
    .map((line) => line.replace(/[ \t\f\v]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { text, title: title ? decodeEntities(title.replace(/\s+/g, ' ').trim()) || null : null };
}
