// PDF parsing in a worker thread: PDF.js (through unpdf) is ECMAScript-module only and CPU-heavy, so it runs
// here, off the service's event loop, with its own memory ceiling, and the caller can terminate it on timeout.
// Input (workerData): { data: Uint8Array, ocrBelowChars: number, maxPages: number, maxImagePixels: number }.
// Output (message): { pages: string[], totalPages: number, images: [{ page, width, height, channels, data }] }
// where images are the raster images of pages whose text layer is shorter than ocrBelowChars (scanned pages).
import { parentPort, workerData } from 'node:worker_threads';
import { extractImages, getDocumentProxy } from 'unpdf';
import { MAX_INFLATED_BYTES, TooLarge, pdfInflatedSize } from './inflate-guard.mjs';

const { data, ocrBelowChars, maxPages, maxImagePixels } = workerData;
try {
  // Counted before PDF.js inflates them: what it inflates lives outside this thread's heap ceiling.
  const inflated = await pdfInflatedSize(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  if (inflated > MAX_INFLATED_BYTES) {
    throw new TooLarge();
  }
  // PDF.js decodes an image into memory outside this thread's heap ceiling: an image larger than the OCR engine
  // would read is dropped before it is decoded (a few kilobytes of a PDF can declare gigabytes of pixels). Fonts
  // are never compiled to JavaScript.
  const pdf = await getDocumentProxy(new Uint8Array(data), { maxImageSize: maxImagePixels, isEvalSupported: false });
  // Only the pages read: one at a time, the first `maxPages` (all of them at once, then cut, ran a 20,000-page PDF
  // out of memory instead of giving its first pages). A page's text as unpdf's `extractText` joins it.
  const totalPages = pdf.numPages;
  const pages = [];
  for (let i = 1; i <= Math.min(totalPages, maxPages); i += 1) {
    const page = await pdf.getPage(i);
    const content = await page.getTextContent();
    pages.push(content.items.filter((item) => item.str != null).map((item) => item.str + (item.hasEOL ? '\n' : '')).join(''));
    page.cleanup();
  }
  const images = [];
  for (let i = 0; i < pages.length; i += 1) {
    if ((pages[i] ?? '').trim().length >= ocrBelowChars) continue;
    for (const img of await extractImages(pdf, i + 1)) {
      images.push({ page: i + 1, width: img.width, height: img.height, channels: img.channels, data: img.data });
    }
  }
  parentPort.postMessage({ ok: true, pages, totalPages, images });
} catch (err) {
  if (err instanceof TooLarge) parentPort.postMessage({ ok: false, error: 'too_large', limit: MAX_INFLATED_BYTES });
  else parentPort.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) });
}
