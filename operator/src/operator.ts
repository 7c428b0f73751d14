import type { Logger } from '@lore/runtime/kit';
import type { KubeClient } from './kube/client';
import { API_KEY, INGRESS, MEMORY, NAMESPACE, SECRET } from './kube/resources';
import { objectKey, type KubeObject } from './kube/types';
import type { PlatformAdmin } from './platform/admin-client';
import { apiKeyReconciler, apiKeysReferencing } from './controllers/api-key-controller';
import type { ControllerContext } from './controllers/context';
import { memoryReconciler } from './controllers/memory-controller';
import { MEMORY_ANNOTATION } from './controllers/memory-ingress';
import { API_KEY_FINALIZER, MANAGED_BY_LABEL, MANAGED_BY_VALUE, MEMORY_FINALIZER, OWNER_KIND_LABEL } from './controllers/names';
import type { ControllerHooks, OperatorSettings } from './controllers/settings';
import { TenantRegistry } from './controllers/tenant';
import { Tombstones } from './controllers/tenant-reconciler';
import type { ApiKeyObject, IngressObject, MemoryObject, NamespaceObject, SecretObject } from './controllers/types';
import type { BackoffOptions } from './runtime/backoff';
import { STALLED } from './runtime/conditions';
import { Controller } from './runtime/controller';
import { deepEqual } from './runtime/equality';
import { KubeEventRecorder, type EventRecorder } from './runtime/events';
import { Informer } from './runtime/informer';
import { LeaderElector } from './runtime/leader-election';
import type { OperatorMetrics } from './runtime/metrics';

export interface LeaderElectionSettings {
  namespace: string;
  name: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

export interface OperatorOptions {
  kube: KubeClient;
  admin: PlatformAdmin;
  logger: Logger;
  metrics: OperatorMetrics;
  settings: OperatorSettings;
  /** This replica's name (the pod name): Lease holder and Event reportingInstance. */
  identity: string;
  /** Serve only namespaces matching this label selector (all namespaces when empty). */
  namespaceSelector?: string;
  workers?: number;
  /** Periodic resync of every Memory and ApiKey; 0 disables it. */
  resyncMs?: number;
  backoff?: BackoffOptions;
  /** Leader election through a Lease; `undefined` runs the controllers at once (single replica, tests). */
  leaderElection?: LeaderElectionSettings;
  hooks?: ControllerHooks;
  events?: EventRecorder;
  /** Leadership was lost: the process should exit so it restarts as a fresh candidate. */
  onLostLeadership?: () => void;
}

/**
 * The operator: informers on namespaces, Memories, ApiKeys and the Secrets and Ingresses it manages, a controller
 * per kind, and leader election. Caches fill on every replica (a standby is warm); only the leader reconciles.
 */
export class LoreOperator {
  readonly memories: Informer<MemoryObject>;
  readonly apiKeys: Informer<ApiKeyObject>;
  readonly namespaces: Informer<NamespaceObject>;
  readonly secrets: Informer<SecretObject>;
  readonly ingresses: Informer<IngressObject>;
  readonly memoryController: Controller;
  readonly apiKeyController: Controller;
  readonly tombstones = { memories: new Tombstones<MemoryObject>(), apiKeys: new Tombstones<ApiKeyObject>() };
  private readonly elector?: LeaderElector;
  private readonly events: EventRecorder;
  private readonly log: Logger;
  private started = false;
  /** stop() was asked for: leadership released on purpose is no loss. */
  private stopping = false;
  private controllersRunning = false;

  constructor(private readonly opts: OperatorOptions) {
    const { kube, logger, settings } = opts;
    this.log = logger;
    const resyncMs = opts.resyncMs ?? 10 * 60_000;
    const managed = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;
    this.namespaces = new Informer({ kube, logger, resource: NAMESPACE, labelSelector: opts.namespaceSelector || undefined });
    this.memories = new Informer({ kube, logger, resource: MEMORY, resyncMs });
    this.apiKeys = new Informer({ kube, logger, resource: API_KEY, resyncMs });
    this.secrets = new Informer({ kube, logger, resource: SECRET, labelSelector: managed });
    this.ingresses = new Informer({
      kube,
      logger,
      resource: INGRESS,
      namespace: settings.gatewayNamespace,
      labelSelector: `${managed},${OWNER_KIND_LABEL}=Memory`,
    });

    this.events = opts.events ?? new KubeEventRecorder({ kube, logger, controller: 'lore.dev/operator', instance: opts.identity });
    const ctx: ControllerContext = {
      kube,
      admin: opts.admin,
      events: this.events,
      tenants: new TenantRegistry(opts.admin),
      settings,
      logger,
      caches: { namespaces: this.namespaces, memories: this.memories, apiKeys: this.apiKeys, secrets: this.secrets, ingresses: this.ingresses },
      tombstones: this.tombstones,
      onHostnameFreed: () => this.enqueueHostnameWaiters(),
      hooks: opts.hooks,
    };
    const common = { logger, metrics: opts.metrics, workers: opts.workers ?? 8, backoff: opts.backoff };
    this.memoryController = new Controller({ ...common, name: 'memory', reconcile: memoryReconciler(ctx) });
    this.apiKeyController = new Controller({ ...common, name: 'apikey', reconcile: apiKeyReconciler(ctx) });
    this.wire();

    if (opts.leaderElection) {
      this.elector = new LeaderElector({
        kube,
        logger,
        identity: opts.identity,
        ...opts.leaderElection,
        onStartedLeading: () => this.startControllers(),
        onStoppedLeading: () => {
          // A requested stop drains the controllers itself and is no loss of leadership.
          if (this.stopping) return;
          // Lost: no key is taken any more, and the process is told at once (not after in-flight reconciles
          // finish): another replica may lead as soon as the lease runs out.
          const drained = this.stopControllers();
          if (opts.onLostLeadership) opts.onLostLeadership();
          else void drained;
        },
      });
    }
  }

  /** Starts the informers, waits for their caches, then campaigns for leadership (or starts reconciling). */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const informers = [this.namespaces, this.memories, this.apiKeys, this.secrets, this.ingresses];
    for (const i of informers) i.start();
    await Promise.all(informers.map((i) => i.waitForSync()));
    this.log.info('caches synced');
    if (this.elector) this.elector.start();
    else this.startControllers();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.stopControllers();
    await this.events.flush?.();
    await this.elector?.stop();
    this.opts.metrics.leader.set(0);
    await Promise.all([this.namespaces, this.memories, this.apiKeys, this.secrets, this.ingresses].map((i) => i.stop()));
  }

  get synced(): boolean {
    return [this.namespaces, this.memories, this.apiKeys, this.secrets, this.ingresses].every((i) => i.hasSynced());
  }

  get isLeader(): boolean {
    return this.controllersRunning;
  }

  private startControllers(): void {
    if (this.controllersRunning) return;
    this.controllersRunning = true;
    this.opts.metrics.leader.set(1);
    this.memoryController.start();
    this.apiKeyController.start();
  }

  private async stopControllers(): Promise<void> {
    if (!this.controllersRunning) return;
    this.controllersRunning = false;
    this.opts.metrics.leader.set(0);
    await Promise.all([this.memoryController.stop(), this.apiKeyController.stop()]);
  }

  private wire(): void {
    const mem = this.memoryController;
    const keys = this.apiKeyController;

    this.namespaces.addHandlers({
      onAdd: (ns) => this.enqueueNamespace(ns),
      onUpdate: (old, ns) => {
        if (!deepEqual(old.metadata.labels, ns.metadata.labels) || !deepEqual(old.metadata.annotations, ns.metadata.annotations)) this.enqueueNamespace(ns);
      },
    });

    // Objects of namespaces this operator does not serve are never queued (a finalizer of ours still is: the
    // cleanup it stands for must run). Namespaces arriving later queue their objects themselves.
    const served = (o: KubeObject, finalizer: string) =>
      !!this.namespaces.get(undefined, String(o.metadata.namespace)) || (!!o.metadata.deletionTimestamp && !!o.metadata.finalizers?.includes(finalizer));
    const referencing = (m: MemoryObject) => apiKeysReferencing(this.apiKeys.list(), m).forEach((k) => keys.enqueue(k));
    const memory = (m: MemoryObject) => {
      if (served(m, MEMORY_FINALIZER)) mem.enqueue(objectKey(m));
    };
    const apiKey = (k: ApiKeyObject) => {
      if (served(k, API_KEY_FINALIZER)) keys.enqueue(objectKey(k));
    };
    this.memories.addHandlers({
      onAdd: (m) => {
        memory(m);
        referencing(m);
      },
      onUpdate: (old, m) => {
        if (needsReconcile(old, m, MEMORY_FINALIZER)) memory(m);
        referencing(m);
      },
      onDelete: (m) => {
        // Gone with our finalizer still on it: the API server deleted it before its cleanup could run.
        if (m.metadata.finalizers?.includes(MEMORY_FINALIZER)) {
          this.tombstones.memories.add(m);
          mem.enqueue(objectKey(m));
        } else memory(m);
        referencing(m);
      },
      onResync: memory,
    });

    this.apiKeys.addHandlers({
      onAdd: apiKey,
      onUpdate: (old, k) => {
        if (needsReconcile(old, k, API_KEY_FINALIZER)) apiKey(k);
      },
      onDelete: (k) => {
        if (k.metadata.finalizers?.includes(API_KEY_FINALIZER)) {
          this.tombstones.apiKeys.add(k);
          keys.enqueue(objectKey(k));
        } else apiKey(k);
      },
      onResync: apiKey,
    });

    // Children: a change or a deletion by anyone is drift to repair. Their creation is the operator's own
    // write (or part of the initial list, whose owners are queued anyway), so it queues nothing.
    const toOwner = (s: SecretObject) => {
      const ref = s.metadata.ownerReferences?.find((r) => r.controller && r.apiVersion.startsWith('lore.dev/'));
      if (!ref) return;
      const key = `${s.metadata.namespace}/${ref.name}`;
      if (ref.kind === 'Memory') mem.enqueue(key);
      else if (ref.kind === 'ApiKey') keys.enqueue(key);
    };
    this.secrets.addHandlers({ onUpdate: (_o, s) => toOwner(s), onDelete: toOwner });

    const toMemory = (i: IngressObject) => {
      const key = i.metadata.annotations?.[MEMORY_ANNOTATION];
      if (key) mem.enqueue(key);
    };
    this.ingresses.addHandlers({ onUpdate: (_o, i) => toMemory(i), onDelete: toMemory });
  }

  /** Memories stalled because their hostname was taken look again once a hostname is released. */
  private enqueueHostnameWaiters(): void {
    const waiting = (m: MemoryObject) => !!m.status?.conditions?.some((c) => c.type === STALLED && c.status === 'True' && c.reason === 'HostnameConflict');
    for (const m of this.memories.list(waiting)) this.memoryController.enqueue(objectKey(m));
  }

  private enqueueNamespace(ns: NamespaceObject): void {
    const name = ns.metadata.name;
    for (const m of this.memories.list((o) => o.metadata.namespace === name)) this.memoryController.enqueue(objectKey(m));
    for (const k of this.apiKeys.list((o) => o.metadata.namespace === name)) this.apiKeyController.enqueue(objectKey(k));
  }
}

/**
 * Whether an update of a Memory or ApiKey can change what the operator must do. Writes of our own status come
 * back as watch events; reconciling them again would only confirm what was just written.
 */
export function needsReconcile(old: KubeObject, obj: KubeObject, ownFinalizer: string): boolean {
  const a = old.metadata;
  const b = obj.metadata;
  return (
    a.generation !== b.generation ||
    a.deletionTimestamp !== b.deletionTimestamp ||
    !deepEqual(withoutAddedOwn(a.finalizers, b.finalizers, ownFinalizer), b.finalizers) ||
    !deepEqual(a.labels, b.labels) ||
    !deepEqual(a.annotations, b.annotations)
  );
}

/**
 * The old finalizer list as it would be after the operator added its own finalizer: that addition is the
 * reconcile's first step, and the reconcile that made it goes on with the patched object.
 */
function withoutAddedOwn(before: string[] | undefined, after: string[] | undefined, own: string): string[] | undefined {
  if (!after?.includes(own) || before?.includes(own)) return before;
  return [...(before ?? []), own];
}
