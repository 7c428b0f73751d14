import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { WorkerChannel } from './worker-thread';

/** Text recognition for images and scanned PDF pages. */
export interface OcrEngine {
  readonly kind: string;
  recognize(image: Buffer): Promise<string>;
  close(): Promise<void>;
}

/** `workers/` sits beside `src/` and `dist/`, so the path is the same from sources (tests) and the build. */
const WORKER = join(__dirname, '..', 'workers', 'ocr.mjs');

/**
 * tesseract.js (WebAssembly) with the English LSTM model shipped by the `@tesseract.js-data/eng` package: no
 * download at run time. It runs in a worker thread of ours (`workers/ocr.mjs`, started clean: see
 * `worker-thread.ts`), created on first use; recognitions are serialised, each bounded by `timeoutMs`. Any
 * failure of the thread, or of tesseract's own thread inside it, rejects that recognition and recycles the worker;
 * it never reaches the process.
 */
export class TesseractOcr implements OcrEngine {
  readonly kind = 'tesseract.js';
  private readonly channel: WorkerChannel;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: { timeoutMs: number; logger?: Logger; workerFile?: string }) {
    this.channel = new WorkerChannel({
      file: options.workerFile ?? WORKER,
      what: 'the OCR engine',
      workerData: { langPath: TesseractOcr.langPath() },
      logger: options.logger,
    });
  }

  static langPath(): string {
    return join(dirname(require.resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int');
  }

  recognize(image: Buffer): Promise<string> {
    const run = this.queue.then(async () => {
      // A copy of our own to hand over: a Buffer may be a view of a pool other code still uses.
      const copy = new Uint8Array(image);
      try {
        const reply = await this.channel.request<{ text: string }>({ image: copy }, [copy.buffer], this.options.timeoutMs);
        return reply.text;
      } catch (err) {
        // A file tesseract could not read may leave its engine in any state: start the next file on a fresh one.
        await this.channel.close();
        throw err;
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  close(): Promise<void> {
    return this.channel.close();
  }
}
