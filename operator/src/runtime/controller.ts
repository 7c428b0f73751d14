import type { Logger } from '@lore/runtime/kit';
import { KubeApiError } from '../kube/errors';
import { DEFAULT_BACKOFF, type BackoffOptions } from './backoff';
import type { OperatorMetrics } from './metrics';
import { WorkQueue } from './work-queue';

export interface ReconcileResult {
  /** Reconcile this key again after this delay even if nothing changes (expiries, slow external state). */
  requeueAfterMs?: number;
}

export type Reconcile = (key: string) => Promise<ReconcileResult | void>;

/** Sorts an error into a bounded metric label, and lets domain errors name their own kind. */
export type ErrorClassifier = (err: unknown) => string;

export interface ControllerOptions {
  name: string;
  reconcile: Reconcile;
  logger: Logger;
  metrics: OperatorMetrics;
  workers?: number;
  backoff?: BackoffOptions;
  classify?: ErrorClassifier;
}

export function defaultClassify(err: unknown): string {
  if (err instanceof KubeApiError) return err.status === 409 ? 'conflict' : 'kube';
  const kind = (err as { kind?: unknown } | undefined)?.kind;
  return typeof kind === 'string' ? kind : 'other';
}

/**
 * Runs a reconcile function over a work queue with N workers. Level-based: the function receives only a key and
 * reads the current state from the caches, so several events for one object collapse into one reconcile of its
 * newest state. Errors requeue the key with its own exponential backoff; a result may ask for a requeue after a
 * delay; success resets the backoff.
 */
export class Controller {
  readonly queue: WorkQueue;
  private readonly workers: Promise<void>[] = [];
  private running = false;
  private readonly log: Logger;
  private readonly classify: ErrorClassifier;

  constructor(private readonly opts: ControllerOptions) {
    const labels = { controller: opts.name };
    this.log = opts.logger.child({ controller: opts.name });
    this.classify = opts.classify ?? defaultClassify;
    this.queue = new WorkQueue(opts.backoff ?? DEFAULT_BACKOFF, {
      onDepth: (d) => opts.metrics.queueDepth.set(labels, d),
      onAdd: () => opts.metrics.queueAdds.inc(labels),
      onRetry: () => opts.metrics.queueRetries.inc(labels),
    });
  }

  get name(): string {
    return this.opts.name;
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    const n = Math.max(1, this.opts.workers ?? 2);
    for (let i = 0; i < n; i++) this.workers.push(this.worker());
    this.log.info({ workers: n }, 'controller started');
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.workers);
    this.running = false;
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      await this.process(key);
    }
  }

  private async process(key: string): Promise<void> {
    const labels = { controller: this.opts.name };
    const started = process.hrtime.bigint();
    this.opts.metrics.inFlight.inc(labels);
    let result: 'success' | 'requeue' | 'error' = 'success';
    try {
      const r = await this.opts.reconcile(key);
      this.queue.forget(key);
      if (r?.requeueAfterMs !== undefined) {
        result = 'requeue';
        this.queue.addAfter(key, r.requeueAfterMs);
      }
    } catch (err) {
      result = 'error';
      const kind = this.classify(err);
      this.opts.metrics.reconcileErrors.inc({ ...labels, kind });
      const delay = this.queue.addRateLimited(key);
      const failures = this.queue.failuresOf(key);
      // The object's work-queue key as `object`: the logger redacts fields named `key` (they usually hold secrets).
      const log = { object: key, kind, failures, retry_in_ms: delay, err: err instanceof Error ? err.message : String(err) };
      // Conflicts and a cache one version behind are the normal price of optimistic locking: the watch brings
      // the newer object.
      if (kind === 'conflict' || kind === 'stale') this.log.debug(log, 'reconcile raced a newer version; retrying');
      else this.log.warn(log, 'reconcile failed; retrying with backoff');
    } finally {
      this.opts.metrics.inFlight.dec(labels);
      this.opts.metrics.reconcileDuration.observe({ ...labels, result }, Number(process.hrtime.bigint() - started) / 1e9);
      this.queue.done(key);
    }
  }
}
