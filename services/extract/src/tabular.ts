import { replaceTags } from '@lore/ai/html-text';

/** RFC 4180 CSV (quoted fields, doubled quotes, CRLF); the delimiter is sniffed among , ; tab |. */
export function parseCsv(text: string, maxRows = 100_000): string[][] {
  const firstLine = text.slice(0, text.indexOf('\n') >= 0 ? text.indexOf('\n') : text.length);
  const delimiter = [',', ';', '\t', '|'].map((d) => ({ d, n: firstLine.split(d).length })).sort((a, b) => b.n - a.n)[0]?.d ?? ',';
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const ch = text[i] as string;
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 1;
        } else quoted = false;
      } else field += ch;
      continue;
    }
    if (ch === '"' && field === '') quoted = true;
    else if (ch === delimiter) {
      row.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i += 1;
      row.push(field);
      field = '';
      if (row.some((f) => f.trim() !== '')) rows.push(row);
      row = [];
      if (rows.length >= maxRows) return rows;
    } else field += ch;
  }
  row.push(field);
  if (row.some((f) => f.trim() !== '')) rows.push(row);
  return rows;
}

/**
 * A table as prose the retriever and the answerer can use: one line per record, "Header: value; …". Each line
 * stands alone, so a chunk boundary never separates a value from its column name.
 */
export function csvToText(text: string): string {
  const rows = parseCsv(text);
  const header = rows[0];
  if (!header || rows.length < 2) return rows.map((r) => r.join(' | ')).join('\n');
  return rows
    .slice(1)
    .map((r) =>
      `${r
        .map((v, i) => (v.trim() ? `${(header[i] ?? `column ${i + 1}`).trim()}: ${v.trim()}` : ''))
        .filter(Boolean)
        .join('; ')}.`,
    )
    .join('\n');
}

/** JSON as "path: value" lines (bounded depth and size), e.g. `customer.address.city: Oslo.` */
export function jsonToText(text: string, maxLines = 50_000): string {
  const value: unknown = JSON.parse(text);
  const out: string[] = [];
  const walk = (v: unknown, path: string, depth: number) => {
    if (out.length >= maxLines) return;
    if (depth > 32) return;
    if (Array.isArray(v)) {
      v.forEach((item, i) => walk(item, `${path}[${i}]`, depth + 1));
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v as Record<string, unknown>)) walk(child, path ? `${path}.${k}` : k, depth + 1);
    } else if (v !== null && v !== undefined && String(v).trim() !== '') {
      out.push(`${path || 'value'}: ${String(v)}.`);
    }
  };
  walk(value, '', 0);
  return out.join('\n');
}

/**
 * `[text](url)` → `text`, or with `image`, `![alt](url)` → `alt`. A scanner, not `\[([^\]]*)\]\([^)]*\)`: that
 * expression rescans to the end of the input from every `[` that is never closed (100 KB of `![` took 10 s). The
 * next `]` and `)` are remembered, so each character is looked at a bounded number of times.
 */
function replaceLinks(s: string, image: boolean): string {
  const opener = image ? '![' : '[';
  const out: string[] = [];
  let pos = 0;
  let from = 0;
  let close = -1;
  let paren = -1;
  for (;;) {
    const start = s.indexOf(opener, from);
    if (start < 0) break;
    const textStart = start + opener.length;
    if (close < textStart) close = s.indexOf(']', textStart);
    if (close < 0) break;
    if (s[close + 1] !== '(' || (!image && close === textStart)) {
      from = start + 1;
      continue;
    }
    if (paren < close + 2) paren = s.indexOf(')', close + 2);
    if (paren < 0) break;
    out.push(s.slice(pos, start), s.slice(textStart, close));
    pos = paren + 1;
    from = pos;
  }
  out.push(s.slice(pos));
  return out.join('');
}

/** Removes `<…>` with at least one character inside; an empty `<>` stays as text. */
function removeTags(s: string): string {
  return replaceTags(s, (text, lt) => (text[lt + 1] === '>' ? null : ''));
}

/** Markdown stays Markdown (the chunker reads its headings); only noise that hurts retrieval is removed. */
export function cleanMarkdown(text: string): string {
  const body = text.replace(/^---\n[\s\S]*?\n---\n/, ''); // front matter
  return removeTags(replaceLinks(replaceLinks(body, true), false))
    .replace(/^```.*$/gm, '')
    .replace(/(\*\*|__)(.*?)\1/g, '$2');
}
