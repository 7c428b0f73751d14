// DOCX text in a worker thread: mammoth builds the whole document in memory, so a small file that unzips to a
// huge document.xml (a zip bomb of paragraphs) could exhaust the service's heap, which is fatal to a process. Here
// it can only exhaust this thread's own ceiling, and the caller can terminate it on timeout.
// Input (workerData): { data: Uint8Array }. Output (message): { ok: true, text } or { ok: false, error }.
import { parentPort, workerData } from 'node:worker_threads';
import mammoth from 'mammoth';
import { MAX_INFLATED_BYTES, TooLarge, zipInflatedSize } from './inflate-guard.mjs';

const { data } = workerData;
try {
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  // Counted before mammoth inflates it: what it inflates lives outside this thread's heap ceiling.
  const inflated = await zipInflatedSize(buffer);
  if (inflated !== null && inflated > MAX_INFLATED_BYTES) {
    throw new TooLarge();
  }
  const result = await mammoth.extractRawText({ buffer });
  parentPort.postMessage({ ok: true, text: result.value });
} catch (err) {
  if (err instanceof TooLarge) parentPort.postMessage({ ok: false, error: 'too_large', limit: MAX_INFLATED_BYTES });
  else parentPort.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) });
}
