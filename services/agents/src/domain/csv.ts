import { parse } from 'csv-parse/sync';

/**
 * Reading an uploaded CSV file (docs/agents.md, "CSV import"): the encoding (UTF-8, UTF-16 by its byte-order mark,
 * windows-1252 when the bytes are not valid UTF-8), the delimiter (comma, semicolon or tab), a header row, then every
 * record checked against the header. The upload's analysis and the import read the file with the same function, so
 * an import resumed after a restart sees exactly the rows the analysis counted.
 */

export type CsvEncoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252';
export type CsvDelimiter = ',' | ';' | '\t';

export const DELIMITER_NAMES: Record<CsvDelimiter, string> = { ',': 'comma', ';': 'semicolon', '\t': 'tab' };

export interface CsvLimits {
  maxBytes: number;
  maxColumns: number;
  maxRows: number;
}

export const DEFAULT_CSV_LIMITS: CsvLimits = { maxBytes: 50 * 1024 * 1024, maxColumns: 200, maxRows: 200_000 };

/**
 * One problem of a file. `row` is the record's number in the file, the header being 1 (0: the file as a whole);
 * `column` the header's name of the column ('' when the problem is not one column's); `value` what was found there.
 */
export interface CsvProblem {
  row: number;
  column: string;
  message: string;
  value: string;
}

export interface CsvFile {
  encoding: CsvEncoding;
  /** True when the file started with a byte-order mark. */
  bom: boolean;
  delimiter: CsvDelimiter;
  header: string[];
  /** The data records (after the header), each as long as the header; record i is row i + 2. */
  rows: string[][];
}

export type CsvReading = { ok: true; file: CsvFile } | { ok: false; errors: CsvProblem[]; encoding?: CsvEncoding; delimiter?: CsvDelimiter };

/** Problems listed at most (a final entry says how many more there were). */
export const MAX_LISTED_PROBLEMS = 100;
/** Characters of a problem's `value`. */
const MAX_VALUE_CHARS = 200;
/** Characters of one record (a runaway quoted field stops here). */
export const MAX_RECORD_CHARS = 1024 * 1024;
/**
 * Characters of one header name. A column's name is its id: the list's column, every restored cell and the
 * directory's field key repeat it, so a long one multiplies what a file stores and answers; 200 is what a review's
 * display name may be.
 */
export const MAX_HEADER_CHARS = 200;

/**
 * Characters (code points) of `v`. The limits say characters, as the review's names and the file name count them;
 * an emoji is one character but two UTF-16 units.
 */
export function charCount(v: string): number {
  let n = 0;
  for (let i = 0; i < v.length; i += v.codePointAt(i)! > 0xffff ? 2 : 1) n += 1;
  return n;
}

/**
 * `v` cut to MAX_VALUE_CHARS characters, then `…`. The cut falls between code points: one through a surrogate pair
 * would leave a lone half, which jsonb refuses, and the problem could not be stored (until 2026-11-30 the upload then
 * stayed `analyzing`).
 */
export function clip(v: string): string {
  let end = 0;
  for (let n = 0; end < v.length && n < MAX_VALUE_CHARS; n += 1) end += v.codePointAt(end)! > 0xffff ? 2 : 1;
  return end < v.length ? `${v.slice(0, end)}…` : v;
}

/** A value shown in a problem: NUL (which jsonb cannot hold) shown as ␀, then clipped. */
const shown = (v: string): string => clip(v.replace(/\u0000/g, '\u2400'));
const whole = (message: string, value = ''): CsvProblem => ({ row: 0, column: '', message, value });

/**
 * windows-1252's characters for bytes 0x80–0x9F (WHATWG's table; the five bytes it leaves undefined keep their C1
 * code point). Node's TextDecoder('windows-1252') decodes those bytes as ISO-8859-1 would, so they are mapped here.
 */
const CP1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f,
  0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
];

export function decodeWindows1252(bytes: Uint8Array): string {
  return new TextDecoder('latin1').decode(bytes).replace(/[\u0080-\u009f]/g, (c) => String.fromCharCode(CP1252_HIGH[c.charCodeAt(0) - 0x80]!));
}

/**
 * Decodes the bytes: a BOM decides (UTF-8, UTF-16LE/BE), else UTF-8 when valid, else windows-1252. The text never
 * holds a lone surrogate (jsonb refuses one): UTF-8 that encodes a surrogate is not valid UTF-8 (so read as
 * windows-1252), and the UTF-16 decoders replace an unpaired surrogate with U+FFFD.
 */
export function decodeCsv(bytes: Uint8Array): { text: string; encoding: CsvEncoding; bom: boolean } {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    return { text: new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes.subarray(3)), encoding: 'utf-8', bom: true };
  }
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return { text: new TextDecoder('utf-16le', { ignoreBOM: true }).decode(bytes.subarray(2)), encoding: 'utf-16le', bom: true };
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) return { text: new TextDecoder('utf-16be', { ignoreBOM: true }).decode(bytes.subarray(2)), encoding: 'utf-16be', bom: true };
  try {
    return { text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes), encoding: 'utf-8', bom: false };
  } catch {
    return { text: decodeWindows1252(bytes), encoding: 'windows-1252', bom: false };
  }
}

/** Text that is no CSV: a NUL, or more than 1% control characters other than tab, CR and LF, in its first 64 KiB. */
export function looksBinary(text: string): boolean {
  const sample = text.slice(0, 64 * 1024);
  if (sample.includes('\u0000')) return true;
  let controls = 0;
  for (let i = 0; i < sample.length; i += 1) {
    const c = sample.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || (c >= 0x7f && c < 0xa0) || c === 0xfffd) controls += 1;
  }
  return controls > Math.max(2, sample.length / 100);
}

/** Delimiters counted outside quotes on each of the first `maxLines` lines. */
function delimiterCounts(text: string, delimiter: string, maxLines = 20): number[] {
  const counts: number[] = [];
  let current = 0;
  let quoted = false;
  for (let i = 0; i < text.length && counts.length < maxLines; i += 1) {
    const ch = text[i];
    if (ch === '"') quoted = !quoted;
    else if (!quoted && ch === delimiter) current += 1;
    else if (!quoted && ch === '\n') {
      counts.push(current);
      current = 0;
    }
  }
  if (counts.length < maxLines && current > 0) counts.push(current);
  return counts;
}

/**
 * The delimiter of the file: of comma, semicolon and tab, the one found in the header whose count the most sampled
 * lines repeat, then the one found most often; a comma when the header holds none (one column).
 */
export function detectDelimiter(text: string): CsvDelimiter {
  let best: { d: CsvDelimiter; consistency: number; count: number } | null = null;
  for (const d of [',', ';', '\t'] as CsvDelimiter[]) {
    const counts = delimiterCounts(text, d);
    const head = counts[0] ?? 0;
    if (head === 0) continue;
    const consistency = counts.filter((c) => c === head).length / counts.length;
    if (!best || consistency > best.consistency || (consistency === best.consistency && head > best.count)) best = { d, consistency, count: head };
  }
  return best?.d ?? ',';
}

interface CsvParseError {
  code?: string;
  message?: string;
  records?: number;
}

function parseProblem(err: CsvParseError): CsvProblem {
  const row = (err.records ?? 0) + 1;
  switch (err.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return { row, column: '', message: 'a quoted field is not closed (a " is missing)', value: '' };
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return { row, column: '', message: 'a character follows a closing quote (a quote inside a quoted field must be doubled: "")', value: '' };
    case 'INVALID_OPENING_QUOTE':
      return { row, column: '', message: 'a quote opens in the middle of a field', value: '' };
    case 'CSV_MAX_RECORD_SIZE':
      return { row, column: '', message: `a record is longer than ${MAX_RECORD_CHARS} characters (an unclosed quote?)`, value: '' };
    default:
      return { row, column: '', message: `the file is not valid CSV (${err.message ?? 'unreadable'})`, value: '' };
  }
}

const NUL_MESSAGE = 'the field holds a NUL character (binary data?), which cannot be stored';

/**
 * The fields of a record that hold a NUL. The binary check samples the first 64 KiB only; a NUL further on would
 * pass the analysis and then fail the import partway (jsonb cannot hold one), leaving a partial list behind.
 */
function nulProblems(record: string[], header: string[], row: number): CsvProblem[] {
  const found: CsvProblem[] = [];
  record.forEach((field, j) => {
    if (field.includes('\u0000')) found.push({ row, column: shown(header[j] ?? ''), message: NUL_MESSAGE, value: shown(field.trim()) });
  });
  return found;
}

function capped(errors: CsvProblem[]): CsvProblem[] {
  if (errors.length <= MAX_LISTED_PROBLEMS) return errors;
  return [...errors.slice(0, MAX_LISTED_PROBLEMS), whole(`and ${errors.length - MAX_LISTED_PROBLEMS} more problems`)];
}

/**
 * Reads a whole CSV file, or says everything wrong with it: too large, empty, binary, malformed (unclosed quote,
 * stray quote, a record over MAX_RECORD_CHARS), a header with empty, too long or repeated names, more columns or rows than allowed, only a header, records
 * whose field count differs from the header's, a field holding a NUL anywhere in the file.
 */
export function readCsv(bytes: Uint8Array, limits: CsvLimits): CsvReading {
  if (bytes.length > limits.maxBytes) return { ok: false, errors: [whole(`the file is larger than ${limits.maxBytes} bytes`, String(bytes.length))] };
  const { text, encoding, bom } = decodeCsv(bytes);
  if (text.trim() === '') return { ok: false, encoding, errors: [whole('the file is empty')] };
  if (looksBinary(text)) return { ok: false, encoding, errors: [whole('the file is not CSV text (it holds binary data)')] };
  const delimiter = detectDelimiter(text);
  let records: string[][];
  try {
    records = parse(text, {
      delimiter,
      relax_column_count: true,
      skip_empty_lines: true,
      // One record past the limit is enough to know it is exceeded.
      to: limits.maxRows + 2,
      max_record_size: MAX_RECORD_CHARS,
    }) as string[][];
  } catch (err) {
    return { ok: false, encoding, delimiter, errors: [parseProblem(err as CsvParseError)] };
  }
  const header = (records[0] ?? []).map((h) => h.trim());
  // Past the binary check's sample a NUL is looked for field by field (only when the text holds one at all).
  const hasNul = text.includes('\u0000');
  const errors: CsvProblem[] = [];
  if (header.length > limits.maxColumns) {
    return { ok: false, encoding, delimiter, errors: [{ row: 1, column: '', message: `the file has ${header.length} columns; at most ${limits.maxColumns} are allowed`, value: String(header.length) }] };
  }
  const seen = new Set<string>();
  header.forEach((name, i) => {
    if (name === '') errors.push({ row: 1, column: `column ${i + 1}`, message: 'the header names no column here', value: '' });
    else if (hasNul && name.includes('\u0000')) errors.push({ row: 1, column: shown(name), message: NUL_MESSAGE, value: shown(name) });
    else if (charCount(name) > MAX_HEADER_CHARS) errors.push({ row: 1, column: clip(name), message: `the column's name is longer than ${MAX_HEADER_CHARS} characters`, value: String(charCount(name)) });
    else if (seen.has(name)) errors.push({ row: 1, column: name, message: 'the header names this column more than once', value: name });
    seen.add(name);
  });
  const rows = records.slice(1);
  if (rows.length === 0) errors.push(whole('the file has a header and no rows'));
  if (rows.length > limits.maxRows) errors.push(whole(`the file has more than ${limits.maxRows} ${limits.maxRows === 1 ? 'row' : 'rows'}`, String(limits.maxRows)));
  rows.forEach((record, i) => {
    if (record.length !== header.length) {
      const fields = record.length === 1 ? '1 field' : `${record.length} fields`;
      errors.push({ row: i + 2, column: '', message: `the row has ${fields}; the header has ${header.length}`, value: shown(record.join(delimiter)) });
    }
    if (hasNul) errors.push(...nulProblems(record, header, i + 2));
  });
  if (errors.length > 0) return { ok: false, encoding, delimiter, errors: capped(errors) };
  return { ok: true, file: { encoding, bom, delimiter, header, rows: rows.map((r) => r.map((v) => v.trim())) } };
}
