import { cutUnits } from '@lore/ai';
import { parse } from 'csv-parse/sync';

/**
 * Reads an uploaded table (CSV, or the same with tabs, semicolons or pipes between fields) for a knowledge graph:
 * the whole file or one clear reason it cannot be read. Pure.
 */

export interface TableLimits {
  maxRows: number;
  maxColumns: number;
  /** Longest field, in characters. */
  maxFieldChars: number;
}

export type TableReading = { ok: true; header: string[]; rows: string[][] } | { ok: false; reason: string };

const DELIMITERS = [',', '\t', ';', '|'] as const;

/** The delimiter the header line uses most (outside quotes); a comma when it has none. */
export function detectDelimiter(firstLine: string): string {
  let best: string = ',';
  let bestCount = 0;
  for (const d of DELIMITERS) {
    let count = 0;
    let quoted = false;
    for (const ch of firstLine) {
      if (ch === '"') quoted = !quoted;
      else if (ch === d && !quoted) count += 1;
    }
    if (count > bestCount) {
      best = d;
      bestCount = count;
    }
  }
  return best;
}

function decode(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return null;
  }
}

const maxRowChars = (limits: TableLimits): number => limits.maxColumns * (limits.maxFieldChars + 1);

export function readTable(bytes: Uint8Array, limits: TableLimits): TableReading {
  const text = decode(bytes);
  if (text === null) return { ok: false, reason: 'the file is not UTF-8 text (a spreadsheet must be saved as CSV)' };
  if (text.trim() === '') return { ok: false, reason: 'the file is empty' };
  // A NUL anywhere (PostgreSQL text cannot hold one), or control characters at the start: not a text table.
  if (text.includes('\u0000') || /[\u0001-\u0008\u000e-\u001f]/.test(text.slice(0, 4096))) return { ok: false, reason: 'the file is not a table (it holds binary data)' };
  const delimiter = detectDelimiter(text.slice(0, text.search(/\r?\n|$/)));
  let records: string[][];
  try {
    records = parse(text, {
      delimiter,
      skip_empty_lines: true,
      // One record past the limit is enough to know it is exceeded.
      to: limits.maxRows + 2,
      // The parser bounds a whole row: as many fields as a row may have, each as long as a field may be (then each
      // field is checked on its own, below).
      max_record_size: maxRowChars(limits),
    }) as string[][];
  } catch (err) {
    const e = err as { code?: string; lines?: number; message?: string };
    const at = e.lines ? ` (line ${e.lines})` : '';
    switch (e.code) {
      case 'CSV_QUOTE_NOT_CLOSED':
        return { ok: false, reason: `a quoted field is never closed${at}` };
      case 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH':
      case 'CSV_RECORD_DONT_MATCH_COLUMNS_LENGTH':
        return { ok: false, reason: `a row has a different number of fields than the header${at}` };
      case 'CSV_INVALID_CLOSING_QUOTE':
      case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
        return { ok: false, reason: `a character follows a closing quote${at} (a quote inside a quoted field must be doubled)` };
      case 'INVALID_OPENING_QUOTE':
        return { ok: false, reason: `a quote opens in the middle of a field${at}` };
      case 'CSV_MAX_RECORD_SIZE':
        return { ok: false, reason: `a row is longer than ${maxRowChars(limits)} characters${at} (an unclosed quote?)` };
      default:
        return { ok: false, reason: `the file is not a valid table${at}` };
    }
  }
  const header = (records[0] ?? []).map((h) => h.trim());
  if (header.length > limits.maxColumns) return { ok: false, reason: `the file has ${header.length} columns; at most ${limits.maxColumns} are allowed` };
  if (header.every((h) => h === '')) return { ok: false, reason: 'the first line names no column' };
  const seen = new Set<string>();
  for (const [i, h] of header.entries()) {
    if (h === '') return { ok: false, reason: `the header names no column ${i + 1}` };
    if (seen.has(h.toLowerCase())) return { ok: false, reason: `the header names the column "${cutUnits(h, 100)}" twice` };
    seen.add(h.toLowerCase());
  }
  const rows = records.slice(1);
  if (rows.length === 0) return { ok: false, reason: 'the file has a header and no rows' };
  if (rows.length > limits.maxRows) return { ok: false, reason: `the file has more than ${limits.maxRows} rows` };
  for (const [i, r] of rows.entries()) {
    if (r.some((v) => v.length > limits.maxFieldChars)) return { ok: false, reason: `row ${i + 2} has a field longer than ${limits.maxFieldChars} characters` };
  }
  return { ok: true, header, rows: rows.map((r) => r.map((v) => v.trim())) };
}
