import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

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
const WORKER = join(__dirname, '..', '..', 'workers', 'pdf-extract.mjs');

export function parsePdf(data: Buffer, options: { timeoutMs: number; maxPages: number; ocrBelowChars: number }): Promise<PdfContent> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER, {
      workerData: { data: new Uint8Array(data), ocrBelowChars: options.ocrBelowChars, maxPages: options.maxPages },
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    });
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      fn();
    };
    const timer = setTimeout(() => finish(() => reject(new Error(`PDF parsing took longer than ${options.timeoutMs} ms`))), options.timeoutMs);
    worker.once('message', (m: { ok: boolean; error?: string } & PdfContent) =>
      finish(() => (m.ok ? resolve({ pages: m.pages, totalPages: m.totalPages, images: m.images }) : reject(new Error(`unreadable PDF: ${m.error ?? 'unknown'}`)))),
    );
    worker.once('error', (err) => finish(() => reject(err)));
    worker.once('exit', (code) => finish(() => reject(new Error(`PDF worker exited with code ${code}`))));
  });
}
