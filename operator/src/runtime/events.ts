import { randomBytes } from 'node:crypto';
import type { Logger } from '@lore/runtime/kit';
import type { KubeClient } from '../kube/client';
import { EVENT } from '../kube/resources';
import type { KubeObject } from '../kube/types';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorder {
  /** Records an event about `obj`; best effort, never delaying or failing a reconcile. */
  record(obj: KubeObject, type: EventType, reason: string, action: string, note: string): Promise<void>;
  /** Waits for events still being sent. */
  flush?(): Promise<void>;
}

export interface KubeEventRecorderOptions {
  kube: KubeClient;
  logger: Logger;
  /** reportingController, e.g. `lore.dev/operator`. */
  controller: string;
  /** reportingInstance: the pod name. */
  instance: string;
  /** The same event (object, reason, note) is not recorded again within this window. */
  dedupeWindowMs?: number;
}

/**
 * Records `events.k8s.io/v1` Events. Repeats of the same event inside a window are dropped so a key retrying
 * with backoff does not flood the namespace, and so an unchanged resync writes nothing.
 */
export class KubeEventRecorder implements EventRecorder {
  private readonly recent = new Map<string, number>();
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly opts: KubeEventRecorderOptions) {}

  async record(obj: KubeObject, type: EventType, reason: string, action: string, note: string): Promise<void> {
    const now = Date.now();
    const window = this.opts.dedupeWindowMs ?? 10 * 60_000;
    const dedupeKey = `${obj.metadata.uid}\u0000${type}\u0000${reason}\u0000${note}`;
    const last = this.recent.get(dedupeKey);
    if (last !== undefined && now - last < window) return;
    this.recent.set(dedupeKey, now);
    if (this.recent.size > 5_000) {
      for (const [k, t] of this.recent) if (now - t >= window) this.recent.delete(k);
    }
    const namespace = obj.metadata.namespace ?? 'default';
    const event = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      // An object name may be 253 characters, an Event's too: the name is cut to leave room for its suffix.
      metadata: { name: `${String(obj.metadata.name).slice(0, 253 - 17).replace(/[.-]+$/, '')}.${randomBytes(8).toString('hex')}`, namespace },
      eventTime: microTime(new Date(now)),
      reportingController: this.opts.controller,
      reportingInstance: this.opts.instance.slice(0, 128),
      action: action.slice(0, 128),
      reason: reason.slice(0, 128),
      note: note.slice(0, 1024),
      type,
      regarding: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: obj.metadata.name,
        namespace: obj.metadata.namespace,
        uid: obj.metadata.uid,
        resourceVersion: obj.metadata.resourceVersion,
      },
    };
    // Sent in the background: an event is a report, and a reconcile must not wait for (or fail with) it.
    const sent = this.opts.kube
      .create(EVENT, event)
      .then(() => undefined)
      .catch((err: unknown) => {
        this.opts.logger.warn({ err: err instanceof Error ? err.message : String(err), reason }, 'could not record event');
      })
      .finally(() => this.pending.delete(sent));
    this.pending.add(sent);
  }

  /** Waits for events still being sent (graceful shutdown). */
  async flush(): Promise<void> {
    await Promise.all([...this.pending]);
  }
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
