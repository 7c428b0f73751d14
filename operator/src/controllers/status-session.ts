import type { KubeClient } from '../kube/client';
import { isConflict } from '../kube/errors';
import type { ResourceType } from '../kube/resources';
import type { Condition, KubeObject } from '../kube/types';
import { summarize, type Summary } from '../runtime/conditions';
import type { EventRecorder } from '../runtime/events';
import { writeStatusIfChanged } from '../runtime/status';
import { StaleCacheError } from './key-secret';

interface WithConditions {
  observedGeneration?: number;
  conditions?: Condition[];
}

/**
 * The status of one object during one reconcile: a working copy the controller edits, written through the
 * status subresource only when it differs from what the object has. Keeps the object in step with each write
 * so a second write in the same reconcile carries the newest resourceVersion.
 */
export class StatusSession<S extends WithConditions, T extends KubeObject & { status?: S }> {
  readonly status: S;
  private current: T;

  constructor(
    private readonly kube: KubeClient,
    private readonly rt: ResourceType,
    obj: T,
    private readonly events: EventRecorder,
    private readonly now: Date,
  ) {
    this.current = obj;
    this.status = structuredClone(obj.status ?? ({} as S));
  }

  get obj(): T {
    return this.current;
  }

  get generation(): number | undefined {
    return this.current.metadata.generation;
  }

  /** Sets Ready/Reconciling/Stalled from a summary (observedGeneration included). */
  summarize(summary: Summary): void {
    this.status.conditions = summarize(this.status.conditions, summary, this.generation, this.now);
  }

  async write(): Promise<void> {
    this.status.observedGeneration = this.generation;
    const r = await writeStatusIfChanged(this.kube, this.rt, this.current, this.status);
    this.current = r.obj;
  }

  /** Ends the reconcile stalled: records why (status and a Warning event) and waits for a change. */
  async stall(reason: string, message: string, requeueAfterMs?: number): Promise<{ requeueAfterMs?: number } | undefined> {
    this.summarize({ state: 'stalled', reason, message });
    await this.write();
    await this.events.record(this.current, 'Warning', reason, 'Reconcile', message);
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
  }

  /** Shows a failed reconcile in status (best effort) before the error goes back to the queue's backoff. */
  async reportFailure(err: unknown): Promise<void> {
    if (err instanceof StaleCacheError || isConflict(err)) return;
    const message = err instanceof Error ? err.message : String(err);
    const reason = (err as { kind?: string }).kind === 'platform' ? 'PlatformError' : 'ReconcileError';
    this.summarize({ state: 'progressing', reason, message: `${message} (retrying with backoff)` });
    try {
      await this.write();
    } catch {
      // The original error is what matters; it is logged and retried by the controller.
    }
  }
}
