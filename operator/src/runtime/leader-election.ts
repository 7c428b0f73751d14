import type { Logger } from '@lore/runtime/kit';
import type { KubeClient } from '../kube/client';
import { isAlreadyExists, isConflict } from '../kube/errors';
import { LEASE } from '../kube/resources';
import type { KubeObject } from '../kube/types';

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

type Lease = KubeObject & { spec?: LeaseSpec };

export interface LeaderElectionOptions {
  kube: KubeClient;
  logger: Logger;
  namespace: string;
  name: string;
  identity: string;
  /** How long a lease is honoured after its last observed renewal. */
  leaseDurationMs?: number;
  /** The leader gives up when it could not renew for this long (must be < leaseDurationMs). */
  renewDeadlineMs?: number;
  /** Interval between acquire or renew attempts. */
  retryPeriodMs?: number;
  onStartedLeading(): void;
  /** Called once when leadership is lost or released; the process must stop reconciling at once. */
  onStoppedLeading(): void;
}

/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's rules:
 * - a candidate takes the lease only when it is free or when its record has not changed for a whole lease
 *   duration as measured on the candidate's own clock (no trust in clock agreement between nodes);
 * - every write is a PUT carrying the resourceVersion read, so two candidates can never both succeed;
 * - the leader renews every retry period and steps down when it has not managed to renew within the renew
 *   deadline, which is shorter than the lease duration, so it stops before anyone else may start: a timer steps
 *   down at the deadline whatever request is in flight, and a request still in flight then is aborted (a renewal
 *   counts from when it was sent);
 * - on a graceful stop the leader releases the lease so a standby takes over without waiting.
 */
export class LeaderElector {
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private observed?: { record: string; at: number };
  private leading = false;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private lastRenew = 0;
  private loop?: Promise<void>;
  private wake?: () => void;
  /** Fires when the renew deadline passes without a successful renewal: the leader steps down then, not later. */
  private deadline?: NodeJS.Timeout;
  /** The lease request in flight, aborted at the renew deadline (or on stop). */
  private inflight?: AbortController;

  constructor(private readonly opts: LeaderElectionOptions) {
    this.leaseDurationMs = opts.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    if (this.renewDeadlineMs >= this.leaseDurationMs) throw new Error('renewDeadlineMs must be shorter than leaseDurationMs');
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    if (this.loop) return;
    this.loop = this.run();
  }

  /** Stops campaigning; a leader releases the lease first. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.inflight?.abort();
    this.wake?.();
    await this.loop;
    if (this.leading) {
      await this.release();
      this.setLeading(false);
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let ok: boolean | 'taken' = false;
      // A renewal counts from when it was sent (the API server may record it any time after), and may not outlive
      // the renew deadline: a request stuck on a dead connection is aborted then.
      const sent = Date.now();
      const ac = new AbortController();
      const budget = this.leading ? Math.max(0, this.lastRenew + this.renewDeadlineMs - sent) : this.renewDeadlineMs;
      const abortAt = setTimeout(() => ac.abort(), budget);
      this.inflight = ac;
      try {
        ok = await this.tryAcquireOrRenew(ac.signal);
      } catch (err) {
        this.opts.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'leader election: lease request failed');
      } finally {
        clearTimeout(abortAt);
        this.inflight = undefined;
      }
      if (this.stopped) break;
      if (ok === true && ac.signal.aborted) ok = false;
      if (ok === true) {
        this.lastRenew = sent;
        if (!this.leading) this.setLeading(true);
        if (this.leading) this.armDeadline();
      } else if (ok === 'taken' && this.leading) {
        this.opts.logger.error('leader election: another replica holds the lease; stepping down');
        this.setLeading(false);
      } else if (this.leading && Date.now() - this.lastRenew >= this.renewDeadlineMs) {
        this.opts.logger.error('leader election: could not renew the lease in time; stepping down');
        this.setLeading(false);
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = setTimeout(resolve, this.jitter(this.retryPeriodMs));
      });
    }
  }

  /** Steps down at lastRenew + renewDeadline unless a renewal succeeds first, whatever request is in flight. */
  private armDeadline(): void {
    if (this.deadline) clearTimeout(this.deadline);
    this.deadline = setTimeout(
      () => {
        if (!this.leading || this.stopped) return;
        this.opts.logger.error('leader election: could not renew the lease in time; stepping down');
        this.inflight?.abort();
        this.setLeading(false);
      },
      Math.max(0, this.lastRenew + this.renewDeadlineMs - Date.now()),
    );
    this.deadline.unref?.();
  }

  private setLeading(value: boolean): void {
    if (this.leading === value) return;
    this.leading = value;
    if (!value && this.deadline) clearTimeout(this.deadline);
    this.opts.logger.info({ identity: this.opts.identity, lease: `${this.opts.namespace}/${this.opts.name}` }, value ? 'became leader' : 'stopped leading');
    if (value) this.opts.onStartedLeading();
    else this.opts.onStoppedLeading();
  }

  /** true: we hold the lease now; 'taken': another candidate holds a live lease; false: try again later. */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean | 'taken'> {
    const { kube, namespace, name, identity } = this.opts;
    const now = new Date();
    const lease = await kube.get<Lease>(LEASE, namespace, name, { signal });
    if (!lease) {
      try {
        await kube.create<Lease>(LEASE, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: this.spec(now, now, 0),
        }, { signal });
        return true;
      } catch (err) {
        if (isAlreadyExists(err)) return false;
        throw err;
      }
    }
    const spec = lease.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.acquireTime, spec.leaseTransitions]);
    if (!this.observed || this.observed.record !== record) this.observed = { record, at: Date.now() };
    const holder = spec.holderIdentity ?? '';
    const iHold = holder === identity;
    const duration = (spec.leaseDurationSeconds ?? this.leaseDurationMs / 1000) * 1000;
    if (holder && !iHold && this.observed.at + duration > Date.now()) return 'taken';

    const acquireTime = iHold && spec.acquireTime ? new Date(spec.acquireTime) : now;
    const transitions = (spec.leaseTransitions ?? 0) + (iHold ? 0 : 1);
    try {
      const updated = await kube.replace<Lease>(LEASE, { ...lease, spec: this.spec(acquireTime, now, transitions) }, { signal });
      const s = updated.spec ?? {};
      this.observed = { record: JSON.stringify([s.holderIdentity, s.renewTime, s.acquireTime, s.leaseTransitions]), at: Date.now() };
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }

  private async release(): Promise<void> {
    const { kube, namespace, name, identity } = this.opts;
    try {
      const lease = await kube.get<Lease>(LEASE, namespace, name);
      if (!lease || lease.spec?.holderIdentity !== identity) return;
      const now = microTime(new Date());
      await kube.replace<Lease>(LEASE, {
        ...lease,
        spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
      });
    } catch (err) {
      this.opts.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'leader election: could not release the lease');
    }
  }

  private spec(acquire: Date, renew: Date, transitions: number): LeaseSpec {
    return {
      holderIdentity: this.opts.identity,
      leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
      acquireTime: microTime(acquire),
      renewTime: microTime(renew),
      leaseTransitions: transitions,
    };
  }

  private jitter(ms: number): number {
    return Math.round(ms * (1 + 0.2 * Math.random()));
  }
}

function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
