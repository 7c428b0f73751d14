import { join } from 'node:path';
import type { Logger } from 'pino';
import { MAX_OCR_PIXELS } from './image-size';
import { runWorkerOnce } from './worker-thread';

export interface PdfImage {
  page: number;
  width: number;
  height: number;
  channels: 1 | 3 | 4;
  data: Uint8Array;
}

export interface PdfContent {
  pages: string[];
  totalPages: number;
  /** Raster images of pages without a usable text layer (scans), for OCR. */
  images: PdfImage[];
}

/** `workers/` sits beside `src/` and `dist/`, so the path is the same from sources (tests) and the build. */
const WORKER = join(__dirname, '..', 'workers', 'pdf-extract.mjs');

/** A worker's answer: the content, or why PDF.js could not read the file. */
type PdfReply = ({ ok: true } & PdfContent) | { ok: false; error?: string; limit?: number };

/** The sentence for a document whose compressed parts expand past the workers' bound (workers/inflate-guard.mjs). */
export const expandsTooFar = (what: string, limit: number): string =>
  `${what} expands to more than ${Math.round(limit / (1024 * 1024))} MiB when decompressed, more than Lore reads (a decompression bomb, or a document too large to read)`;

/**
 * Parses a PDF in its own worker thread (a clean start, a memory ceiling, a timeout). A file PDF.js cannot read,
 * and a thread that fails in any way, reject with an error whose message says why in words a user can read.
 */
export async function parsePdf(data: Buffer, options: { timeoutMs: number; maxPages: number; ocrBelowChars: number; logger?: Logger }): Promise<PdfContent> {
  const bytes = new Uint8Array(data);
  const m = await runWorkerOnce<PdfReply>(WORKER, {
    what: 'the PDF parser',
    workerData: { data: bytes, ocrBelowChars: options.ocrBelowChars, maxPages: options.maxPages, maxImagePixels: MAX_OCR_PIXELS },
    transferList: [bytes.buffer],
    timeoutMs: options.timeoutMs,
    resourceLimits: { maxOldGenerationSizeMb: 512 },
    logger: options.logger,
  });
  if (!m.ok && m.error === 'too_large') throw new Error(expandsTooFar('the PDF', m.limit ?? 0));
  if (!m.ok) throw new Error(`unreadable PDF: ${(m.error ?? 'unknown').slice(0, 200)}`);
  return { pages: m.pages, totalPages: m.totalPages, images: m.images };
}
