import { detectKind, EXTRACT_DEFAULTS, extractDocument, extractionFailureReason, UnsupportedFileError, type FileKind, type OcrEngine } from '@lore/extract';
import type { Logger } from '@lore/runtime';
import type { SkipReason } from './source';
import { decodePage } from './web-page';

/**
 * A file's bytes to a document's text, for the sources that read files (the `file` source's uploads, Google Drive's
 * downloads), with the platform's one extractor (`@lore/extract`, the same as memory uploads): text, Markdown, HTML,
 * CSV, JSON, PDF, DOCX, and images when an OCR engine is given. See "The file source" in docs/core.md.
 */

/** How files are read: the extractor's limits (the memory uploads' by default) and the OCR engine, if any. */
export interface FileReading {
  /** Recognises images and scanned PDF pages; null (core's default): images are skipped as `unsupported_type`. */
  ocr: OcrEngine | null;
  /** The largest PDF, DOCX, JSON or image read; a larger one is skipped as `too_large` (it cannot be cut). */
  maxFileBytes: number;
  pdfTimeoutMs: number;
  maxPdfPages: number;
  ocrBelowChars: number;
  maxOcrImages: number;
  logger?: Logger;
}

export const DEFAULT_FILE_READING: FileReading = { ocr: null, ...EXTRACT_DEFAULTS };

/** Kinds whose bytes may be cut at the document byte limit and still read (the beginning of the text). */
const CUTTABLE = new Set<FileKind>(['text', 'markdown', 'html', 'csv']);

export function isCuttable(kind: FileKind): boolean {
  return CUTTABLE.has(kind);
}

export type FileText =
  | { ok: true; kind: FileKind; text: string; title: string | null; extractor: string; truncated: boolean }
  | { ok: false; reason: Extract<SkipReason, 'unsupported_type' | 'too_large' | 'failed' | 'empty'>; detail: string | null };

export interface FileBytes {
  /** The file's name (its extension helps when the bytes and the type do not say). */
  name: string;
  /** The declared media type without parameters, or null. */
  contentType: string | null;
  /** The declared charset (text kinds), or null. */
  charset: string | null;
  data: Buffer;
  /** The bytes are already the beginning of a longer file (a download cut at the limit). */
  cut?: boolean;
}

/** The UTF-8 beginning of `text` that fits in `maxBytes`, never splitting a character. */
export function cutToBytes(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= maxBytes) return text;
  // Back to the first byte of the character the limit falls in (continuation bytes are 10xxxxxx).
  let end = maxBytes;
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return bytes.subarray(0, end).toString('utf8');
}

/**
 * What the extractor reads a file as (from its first bytes, its name, then its declared type), or why it cannot
 * read it: no kind it knows, or an image without an OCR engine. The first rule `readFileText` applies, and the one
 * uploads for `file` connectors are checked with. `head` may be the file's first 4 KiB (all the type is told from).
 */
export function fileKindOf(file: { name: string; contentType: string | null; head: Buffer }, reading: Pick<FileReading, 'ocr'>): { ok: true; kind: FileKind } | { ok: false; detail: string } {
  const kind = detectKind(file.name, file.contentType ?? '', file.head);
  if (kind === null) return { ok: false, detail: file.contentType ?? 'no content type' };
  if (kind === 'image' && !reading.ocr) return { ok: false, detail: `${file.contentType ?? 'image'} (no OCR engine)` };
  return { ok: true, kind };
}

/** The bytes the extractor tells a file's type from (`detectKind` looks at no more). */
export const KIND_HEAD_BYTES = 4096;

/**
 * Reads one file. Text kinds are decoded with their charset (a byte-order mark, the declared charset, HTML's
 * `<meta>`, else UTF-8) and cut at `maxDocumentBytes`; PDF, DOCX, JSON and images are read whole up to
 * `reading.maxFileBytes`, and their text is cut at `maxDocumentBytes`. A file the extractor refuses or fails on is
 * `failed` with the extractor's reason (written for people, never a path).
 */
export async function readFileText(file: FileBytes, maxDocumentBytes: number, reading: FileReading): Promise<FileText> {
  const known = fileKindOf({ name: file.name, contentType: file.contentType, head: file.data.subarray(0, KIND_HEAD_BYTES) }, reading);
  if (!known.ok) return { ok: false, reason: 'unsupported_type', detail: known.detail };
  const kind = known.kind;
  const limit = Math.max(1, maxDocumentBytes);
  let bytes: Buffer;
  let truncated = file.cut === true;
  if (CUTTABLE.has(kind)) {
    truncated ||= file.data.length > limit;
    // Decoded with the file's own charset, then handed to the extractor as UTF-8 (what it reads).
    bytes = Buffer.from(decodePage(file.data.subarray(0, limit), file.charset, kind === 'html').text, 'utf8');
  } else {
    if (file.cut || file.data.length > reading.maxFileBytes) {
      return { ok: false, reason: 'too_large', detail: `larger than ${reading.maxFileBytes} bytes` };
    }
    bytes = file.data;
  }
  let extracted;
  try {
    extracted = await extractDocument(kind, bytes, {
      ocr: reading.ocr,
      pdfTimeoutMs: reading.pdfTimeoutMs,
      maxPdfPages: reading.maxPdfPages,
      ocrBelowChars: reading.ocrBelowChars,
      maxOcrImages: reading.maxOcrImages,
      ...(reading.logger ? { logger: reading.logger } : {}),
    });
  } catch (err) {
    const reason = extractionFailureReason(kind, err);
    if (!(err instanceof UnsupportedFileError)) reading.logger?.warn({ err, kind, reason }, 'extracting a file failed');
    return { ok: false, reason: 'failed', detail: reason };
  }
  let text = extracted.text.replace(/\r\n?/g, '\n').trim();
  if (!text) return { ok: false, reason: 'empty', detail: null };
  if (Buffer.byteLength(text) > limit) {
    text = cutToBytes(text, limit);
    truncated = true;
  }
  return { ok: true, kind, text, title: extracted.title, extractor: extracted.extractor, truncated };
}
