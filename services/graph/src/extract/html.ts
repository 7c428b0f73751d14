const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', mdash: '—', ndash: '–', hellip: '…', rsquo: '’', lsquo: '‘', rdquo: '”', ldquo: '“', copy: '©', reg: '®', euro: '€', pound: '£' };

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

/**
 * HTML to readable text for indexing: drops scripts, styles, comments and head metadata, keeps headings as
 * Markdown headings (the chunker splits on them), puts block elements on their own lines and list items behind
 * a dash, decodes entities. A tolerant scanner rather than a DOM: malformed markup still yields its text.
 */
export function htmlToText(html: string): { text: string; title: string | null } {
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1];
  let s = html
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(script|style|noscript|template|svg|head)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<(script|style)\b[^>]*\/>/gi, ' ');
  s = s.replace(/<(\/?)([a-zA-Z][a-zA-Z0-9]*)\b[^>]*>/g, (_tag, close: string, name: string) => {
    const n = name.toLowerCase();
    if (!close && /^h[1-6]$/.test(n)) return `\n\n${'#'.repeat(Number(n[1]))} `;
    if (n === 'li') return close ? '' : '\n- ';
    if (n === 'td' || n === 'th') return ' | ';
    return BLOCK.test(n) ? '\n\n' : '';
  });
  s = decodeEntities(s.replace(/<[^>]*>/g, ''));
  const text = s
    .split('\n')
    .map((line) => line.replace(/[ \t\f\v]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { text, title: title ? decodeEntities(title.replace(/\s+/g, ' ').trim()) || null : null };
}
