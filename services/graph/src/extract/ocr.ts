import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { createWorker } from 'tesseract.js';

/** Text recognition for images and scanned PDF pages. */
export interface OcrEngine {
  readonly kind: string;
  recognize(image: Buffer): Promise<string>;
  close(): Promise<void>;
}

interface TesseractWorker {
  recognize(image: Buffer): Promise<{ data: { text: string } }>;
  terminate(): Promise<unknown>;
}

/**
 * tesseract.js (WebAssembly, in a worker thread) with the English LSTM model shipped by the
 * `@tesseract.js-data/eng` package: no download at run time. One worker, created on first use, serialises
 * recognitions; the time per image is bounded by `timeoutMs` (a stuck recognition recycles the worker).
 */
export class TesseractOcr implements OcrEngine {
  readonly kind = 'tesseract.js';
  private worker?: Promise<TesseractWorker>;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: { timeoutMs: number; logger?: Logger }) {}

  static langPath(): string {
    return join(dirname(require.resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int');
  }

  private getWorker(): Promise<TesseractWorker> {
    this.worker ??= createWorker('eng', 1, { langPath: TesseractOcr.langPath(), cacheMethod: 'none', gzip: true }) as Promise<TesseractWorker>;
    return this.worker;
  }

  recognize(image: Buffer): Promise<string> {
    const run = this.queue.then(async () => {
      const worker = await this.getWorker();
      let timer: NodeJS.Timeout | undefined;
      try {
        const result = await Promise.race([
          worker.recognize(image),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`OCR took longer than ${this.options.timeoutMs} ms`)), this.options.timeoutMs);
          }),
        ]);
        return result.data.text;
      } catch (err) {
        await this.close();
        throw err;
      } finally {
        clearTimeout(timer);
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) await (await w.catch(() => null))?.terminate();
  }
}
