import { join } from 'node:path';
import type { Logger } from 'pino';
import { PNG } from 'pngjs';
import { htmlToText } from '@lore/ai/html-text';
import { imageSize, MAX_OCR_PIXELS } from './image-size';
import type { OcrEngine } from './ocr';
import { expandsTooFar, parsePdf, type PdfImage } from './pdf';
import { cleanMarkdown, csvToText, jsonToText } from './tabular';
import { runWorkerOnce, WorkerFailure } from './worker-thread';

export { WorkerFailure } from './worker-thread';
// The engine's interface only: `TesseractOcr` is `@lore/extract/ocr`, for the processes that recognise images.
export type { OcrEngine } from './ocr';

/** `workers/` sits beside `src/` and `dist/`, so the path is the same from sources (tests) and the build. */
const DOCX_WORKER = join(__dirname, '..', 'workers', 'docx-extract.mjs');

export type FileKind = 'text' | 'markdown' | 'html' | 'pdf' | 'docx' | 'csv' | 'json' | 'image';

export class UnsupportedFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedFileError';
  }
}

const EXTENSIONS: Record<string, FileKind> = {
  txt: 'text', text: 'text', log: 'text', md: 'markdown', markdown: 'markdown', mdx: 'markdown', html: 'html', htm: 'html',
  xhtml: 'html', pdf: 'pdf', docx: 'docx', csv: 'csv', tsv: 'csv', json: 'json', png: 'image', jpg: 'image', jpeg: 'image',
  gif: 'image', bmp: 'image', webp: 'image', tif: 'image', tiff: 'image', pbm: 'image',
};

/** Magic bytes first (a client's content type or extension can be wrong), then the extension, then the type. */
export function detectKind(filename: string, contentType: string, bytes: Buffer): FileKind | null {
  const head = bytes.subarray(0, 16);
  if (head.subarray(0, 5).toString('latin1') === '%PDF-') return 'pdf';
  if (head[0] === 0x89 && head.subarray(1, 4).toString('latin1') === 'PNG') return 'image';
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image';
  if (head.subarray(0, 4).toString('latin1') === 'GIF8') return 'image';
  if (head.subarray(0, 2).toString('latin1') === 'BM') return 'image';
  if (head.subarray(0, 4).toString('latin1') === 'II*\u0000' || head.subarray(0, 4).toString('latin1') === 'MM\u0000*') return 'image';
  if (head.subarray(0, 4).toString('latin1') === 'RIFF' && head.subarray(8, 12).toString('latin1') === 'WEBP') return 'image';
  const ext = /\.([a-z0-9]{1,8})$/i.exec(filename)?.[1]?.toLowerCase();
  if (head[0] === 0x50 && head[1] === 0x4b) return ext === 'docx' || contentType.includes('wordprocessingml') ? 'docx' : null;
  if (ext && EXTENSIONS[ext]) return EXTENSIONS[ext] ?? null;
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'text/markdown') return 'markdown';
  if (type === 'text/html') return 'html';
  if (type === 'text/csv') return 'csv';
  if (type === 'application/json') return 'json';
  if (type.startsWith('image/')) return 'image';
  if (type.startsWith('text/') || looksLikeText(bytes)) return 'text';
  return null;
}

function looksLikeText(bytes: Buffer): boolean {
  // A UTF-16 text file (its byte order mark first) is text, though half its bytes are zero.
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) return true;
  const sample = bytes.subarray(0, 4096);
  if (sample.includes(0)) return false;
  return !sample.toString('utf8').includes('\uFFFD');
}

/**
 * The limits files are read with when a service sets none: the memory uploads' (graph) defaults, which every
 * other reader of files (core's connector sources and chat project files) shares.
 */
export const EXTRACT_DEFAULTS = {
  /** The largest file read at all: a PDF or DOCX cannot be cut, so a larger one is refused whole. */
  maxFileBytes: 25 * 1024 * 1024,
  pdfTimeoutMs: 60_000,
  maxPdfPages: 500,
  ocrBelowChars: 20,
  maxOcrImages: 50,
} as const;

export interface ExtractOptions {
  ocr: OcrEngine | null;
  pdfTimeoutMs: number;
  maxPdfPages: number;
  /** A PDF page whose text layer is shorter than this is treated as a scan and OCRed. */
  ocrBelowChars: number;
  /** Most images recognised per file. */
  maxOcrImages: number;
  /** Receives the worker threads' console output (debug level). */
  logger?: Logger;
}

const KIND_LABEL: Record<FileKind, string> = {
  text: 'text', markdown: 'Markdown', html: 'HTML', pdf: 'a PDF document', docx: 'a DOCX document', csv: 'CSV', json: 'JSON', image: 'an image',
};

/**
 * The reason an upload's `error` gives when its file could not be turned into text. Our own failures carry
 * messages written for the user; anything else a parser throws (a library's internal error, which may name
 * paths or internals) becomes a generic sentence for the kind, and the caller logs the original.
 */
export function extractionFailureReason(kind: FileKind | null, err: unknown): string {
  if (err instanceof UnsupportedFileError || err instanceof WorkerFailure) return err.message;
  return kind ? `the file could not be read as ${KIND_LABEL[kind]}` : 'the file could not be read';
}

export interface Extracted {
  text: string;
  /** How the text should be chunked: Markdown keeps its headings. */
  contentType: 'text' | 'markdown';
  extractor: string;
  ocr: boolean;
  title: string | null;
}

/**
 * A text file's characters: UTF-8 (its byte order mark dropped), or UTF-16 when the file starts with a UTF-16 byte
 * order mark (Windows tools write those): read as UTF-8, such a file would be every other character a NUL.
 */
function decodeUtf8(bytes: Buffer): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  const text = bytes.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** NUL characters carry nothing a reader sees, and PostgreSQL text cannot hold them: an extracted text has none. */
const withoutNul = (text: string): string => (text.includes('\u0000') ? text.replace(/\u0000/g, '') : text);

/** Raw pixels (1, 3 or 4 channels) to PNG, the format the OCR engine reads. */
export function pixelsToPng(img: Pick<PdfImage, 'width' | 'height' | 'channels' | 'data'>): Buffer {
  const png = new PNG({ width: img.width, height: img.height });
  const px = img.width * img.height;
  for (let i = 0; i < px; i += 1) {
    const o = i * 4;
    if (img.channels === 1) {
      const g = img.data[i] ?? 0;
      png.data[o] = g;
      png.data[o + 1] = g;
      png.data[o + 2] = g;
      png.data[o + 3] = 255;
    } else {
      const s = i * img.channels;
      png.data[o] = img.data[s] ?? 0;
      png.data[o + 1] = img.data[s + 1] ?? 0;
      png.data[o + 2] = img.data[s + 2] ?? 0;
      png.data[o + 3] = img.channels === 4 ? (img.data[s + 3] ?? 255) : 255;
    }
  }
  return PNG.sync.write(png);
}

/**
 * Turns an uploaded file into text for the ingest pipeline. Throws `UnsupportedFileError` for what it cannot read
 * and `WorkerFailure` when a parser's or the OCR engine's thread fails; `extractionFailureReason` words either.
 */
export async function extractDocument(kind: FileKind, bytes: Buffer, options: ExtractOptions): Promise<Extracted> {
  const extracted = await extractKind(kind, bytes, options);
  return { ...extracted, text: withoutNul(extracted.text), title: extracted.title === null ? null : withoutNul(extracted.title) };
}

async function extractKind(kind: FileKind, bytes: Buffer, options: ExtractOptions): Promise<Extracted> {
  switch (kind) {
    case 'text':
      return { text: decodeUtf8(bytes), contentType: 'text', extractor: 'text', ocr: false, title: null };
    case 'markdown':
      return { text: cleanMarkdown(decodeUtf8(bytes)), contentType: 'markdown', extractor: 'markdown', ocr: false, title: null };
    case 'html': {
      const { text, title } = htmlToText(decodeUtf8(bytes));
      return { text, contentType: 'markdown', extractor: 'html', ocr: false, title };
    }
    case 'csv':
      return { text: csvToText(decodeUtf8(bytes)), contentType: 'text', extractor: 'csv', ocr: false, title: null };
    case 'json':
      try {
        return { text: jsonToText(decodeUtf8(bytes)), contentType: 'text', extractor: 'json', ocr: false, title: null };
      } catch {
        throw new UnsupportedFileError('the file is not valid JSON');
      }
    case 'docx': {
      const data = new Uint8Array(bytes);
      const r = await runWorkerOnce<{ ok: boolean; text?: string; error?: string; limit?: number }>(DOCX_WORKER, {
        what: 'the DOCX reader',
        workerData: { data },
        transferList: [data.buffer],
        timeoutMs: options.pdfTimeoutMs,
        resourceLimits: { maxOldGenerationSizeMb: 512 },
        logger: options.logger,
      });
      if (!r.ok && r.error === 'too_large') throw new UnsupportedFileError(expandsTooFar('the DOCX document', r.limit ?? 0));
      if (!r.ok || typeof r.text !== 'string') {
        // The reader's own words for the operator's log (the user gets the plain sentence).
        options.logger?.warn({ reason: (r.error ?? 'no text').slice(0, 300) }, 'DOCX reader refused a file');
        throw new UnsupportedFileError('the file is not a readable DOCX document');
      }
      return { text: r.text, contentType: 'text', extractor: 'docx', ocr: false, title: null };
    }
    case 'image': {
      if (!options.ocr) throw new UnsupportedFileError('OCR is disabled, so images cannot be read');
      const size = imageSize(bytes);
      if (size && size.width * size.height > MAX_OCR_PIXELS) {
        throw new UnsupportedFileError(`the image is too large to read: ${size.width}×${size.height} pixels (at most ${MAX_OCR_PIXELS / 1_000_000} million)`);
      }
      return { text: await options.ocr.recognize(bytes), contentType: 'text', extractor: 'ocr', ocr: true, title: null };
    }
    case 'pdf': {
      let pdf;
      try {
        pdf = await parsePdf(bytes, { timeoutMs: options.pdfTimeoutMs, maxPages: options.maxPdfPages, ocrBelowChars: options.ocrBelowChars, logger: options.logger });
      } catch (err) {
        throw new UnsupportedFileError((err as Error).message.slice(0, 200));
      }
      const byPage = pdf.pages.map((t) => t.trim());
      let ocrUsed = false;
      if (options.ocr && pdf.images.length > 0) {
        for (const img of pdf.images.slice(0, options.maxOcrImages)) {
          if (img.width * img.height > MAX_OCR_PIXELS) continue; // a bomb, not a page
          const text = (await options.ocr.recognize(pixelsToPng(img))).trim();
          if (!text) continue;
          ocrUsed = true;
          const i = img.page - 1;
          byPage[i] = `${byPage[i] ?? ''}\n${text}`.trim();
        }
      }
      return { text: byPage.filter(Boolean).join('\n\n'), contentType: 'text', extractor: ocrUsed ? 'pdf+ocr' : 'pdf', ocr: ocrUsed, title: null };
    }
  }
}
