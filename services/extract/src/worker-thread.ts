import { Worker, type ResourceLimits, type TransferListItem } from 'node:worker_threads';
import type { Logger } from 'pino';

/**
 * A worker thread did not answer. The message is written for the person who uploaded the file (it ends up in
 * the upload's `error`): it names the step and what happened, never a path or a stack; `cause` keeps the
 * original error for the logs.
 */
export class WorkerFailure extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WorkerFailure';
  }
}

/**
 * How every worker thread of the extractors starts. By default a worker inherits its parent's `execArgv` and
 * `NODE_OPTIONS`: under `npm start` that is `--import tsx --import …/telemetry/register.ts`, which a worker thread
 * cannot load (the TypeScript loader does not reach it), and in the image `--require …/register.js`, which would
 * start a telemetry SDK per thread. Our workers are plain JavaScript that parse untrusted files, so they start with
 * no flags, no preload and an empty environment (no secrets). A library's own threads, started inside one of ours,
 * inherit that clean start.
 */
export function isolatedWorkerOptions(): { execArgv: string[]; env: Record<string, string> } {
  return { execArgv: [], env: {} };
}

/** A thread's error or exit as a reason a user can read. */
export function describeWorkerError(what: string, err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ERR_WORKER_OUT_OF_MEMORY') return `${what} ran out of memory`;
  return typeof code === 'string' && /^[A-Z0-9_]{1,60}$/.test(code) ? `${what} stopped with an error (${code})` : `${what} stopped with an error`;
}

interface StartOptions {
  workerData?: unknown;
  transferList?: TransferListItem[];
  resourceLimits?: ResourceLimits;
  logger?: Logger;
}

/** Most characters of a thread's console output kept per log line. */
const OUTPUT_CHARS = 500;

/**
 * Starts a worker the isolated way. Its stdout and stderr (PDF.js warnings, the OCR engine's messages) are
 * captured instead of written to the process's own streams, and logged at debug level through pino.
 */
function startWorker(file: string, what: string, options: StartOptions): Worker {
  const { logger, ...rest } = options;
  let worker: Worker;
  try {
    worker = new Worker(file, { ...isolatedWorkerOptions(), ...rest, stdout: true, stderr: true });
  } catch (err) {
    throw new WorkerFailure(describeWorkerError(what, err), { cause: err });
  }
  for (const stream of [worker.stdout, worker.stderr]) {
    stream.on('data', (chunk: Buffer) => logger?.debug({ worker: what, output: chunk.toString('utf8').slice(0, OUTPUT_CHARS) }, 'worker thread output'));
  }
  return worker;
}

/**
 * Runs a one-shot worker: it receives `workerData`, posts one message and is then terminated. Resolves with that
 * message; rejects with a `WorkerFailure` when the thread throws, exits, runs out of memory, sends something
 * that cannot be read, or takes longer than `timeoutMs`. Every outcome terminates the thread.
 */
export function runWorkerOnce<T>(
  file: string,
  options: { what: string; workerData: unknown; transferList?: TransferListItem[]; timeoutMs: number; resourceLimits?: ResourceLimits; logger?: Logger },
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let worker: Worker;
    try {
      worker = startWorker(file, options.what, options);
    } catch (err) {
      reject(err as Error);
      return;
    }
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      worker.removeAllListeners('message');
      void worker.terminate().catch(() => undefined);
      fn();
    };
    const timer = setTimeout(() => finish(() => reject(new WorkerFailure(`${options.what} took longer than ${options.timeoutMs} ms`))), options.timeoutMs);
    worker.on('message', (m: T) => finish(() => resolve(m)));
    worker.on('messageerror', (err) => finish(() => reject(new WorkerFailure(`${options.what} sent an answer that could not be read`, { cause: err }))));
    // Listeners stay attached after settling: a late 'error' must never reach the process as an unhandled event.
    worker.on('error', (err) => finish(() => reject(new WorkerFailure(describeWorkerError(options.what, err), { cause: err }))));
    worker.on('exit', (code) => finish(() => reject(new WorkerFailure(`${options.what} exited unexpectedly (code ${code})`))));
  });
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

interface Reply {
  id: number;
  ok: boolean;
  error?: string;
}

/**
 * A long-lived worker that answers requests `{id, …}` with `{id, ok, error?, …}`. It starts on the first request;
 * when it throws, exits, sends something unreadable or a request times out, every request in flight is rejected
 * with a `WorkerFailure`, the thread is terminated, and the next request starts a fresh one. The thread does not
 * keep the process alive.
 */
export class WorkerChannel {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  constructor(
    private readonly spec: { file: string; what: string; workerData?: unknown; resourceLimits?: ResourceLimits; logger?: Logger },
  ) {}

  /** Whether a thread is running (for tests and diagnostics). */
  get running(): boolean {
    return this.worker !== null;
  }

  request<T extends object>(message: Record<string, unknown>, transferList: TransferListItem[], timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let worker: Worker;
      try {
        worker = this.ensure();
      } catch (err) {
        reject(err as Error);
        return;
      }
      const id = this.nextId++;
      const timer = setTimeout(() => this.fail(worker, new WorkerFailure(`${this.spec.what} took longer than ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer });
      try {
        worker.postMessage({ ...message, id }, transferList);
      } catch (err) {
        this.settle(id, () => reject(new WorkerFailure(`${this.spec.what} could not be given the file`, { cause: err })));
      }
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.fail(worker, new WorkerFailure(`${this.spec.what} was stopped`));
  }

  private ensure(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorker(this.spec.file, this.spec.what, { workerData: this.spec.workerData, resourceLimits: this.spec.resourceLimits, logger: this.spec.logger });
    worker.unref();
    worker.on('message', (reply: Reply) => {
      if (!reply || typeof reply.id !== 'number') return;
      if (reply.ok) this.settle(reply.id, (p) => p.resolve(reply));
      else this.settle(reply.id, (p) => p.reject(new WorkerFailure(`${this.spec.what} could not read the file: ${String(reply.error ?? 'unknown error').slice(0, 200)}`)));
    });
    worker.on('messageerror', (err) => this.fail(worker, new WorkerFailure(`${this.spec.what} sent an answer that could not be read`, { cause: err })));
    worker.on('error', (err) => this.fail(worker, new WorkerFailure(describeWorkerError(this.spec.what, err), { cause: err })));
    worker.on('exit', (code) => this.fail(worker, new WorkerFailure(`${this.spec.what} exited unexpectedly (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  private settle(id: number, fn: (p: Pending) => void): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    fn(p);
  }

  /** Rejects everything in flight on `worker` and lets it go; a thread already replaced is ignored. */
  private fail(worker: Worker, err: WorkerFailure): void {
    if (this.worker !== worker) return;
    this.worker = null;
    if (this.pending.size > 0) this.spec.logger?.warn({ err, cause: err.cause, in_flight: this.pending.size }, `${this.spec.what} failed; it restarts on the next file`);
    for (const id of [...this.pending.keys()]) this.settle(id, (p) => p.reject(err));
    void worker.terminate().catch(() => undefined);
  }
}
