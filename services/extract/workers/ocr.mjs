// Text recognition in a worker thread that Lore starts with a clean execArgv and environment (see
// src/worker-thread.ts). tesseract.js starts its own thread from here, which inherits that clean start
// instead of the service's preloads; if that thread fails, nothing listens for its error and this thread dies
// with it, which the service sees as this worker's `error`/`exit`, never as its own crash.
// Input (workerData): { langPath: string }. Requests: { id, image: Uint8Array }. Replies: { id, ok, text?, error? }.
import { parentPort, workerData } from 'node:worker_threads';
import { createWorker } from 'tesseract.js';

let engine;

function getEngine() {
  // Without an errorHandler tesseract.js throws a failed job's error from its message listener (an unreadable
  // image would end this thread); with one, the job's promise rejects and the reply says why.
  engine ??= createWorker('eng', 1, { langPath: workerData.langPath, cacheMethod: 'none', gzip: true, errorHandler: () => undefined });
  return engine;
}

parentPort.on('message', async ({ id, image }) => {
  try {
    const worker = await getEngine();
    const { data } = await worker.recognize(Buffer.from(image.buffer, image.byteOffset, image.byteLength));
    parentPort.postMessage({ id, ok: true, text: data.text });
  } catch (err) {
    // tesseract.js rejects with strings such as "Error: Error attempting to read image."
    const text = err instanceof Error ? err.message : String(err);
    parentPort.postMessage({ id, ok: false, error: text.replace(/^(Error: )+/, '') });
  }
});
