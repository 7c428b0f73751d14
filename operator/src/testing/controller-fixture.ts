import { createLogger } from '@lore/runtime/kit';
import type { ControllerContext } from '../controllers/context';
import type { OperatorSettings, ControllerHooks } from '../controllers/settings';
import { TenantRegistry } from '../controllers/tenant';
import { Tombstones } from '../controllers/tenant-reconciler';
import { API_KEY, INGRESS, MEMORY, NAMESPACE, SECRET } from '../kube/resources';
import type { KubeObject } from '../kube/types';
import { InMemoryPlatformAdmin } from '../platform/in-memory-admin';
import type { EventRecorder, EventType } from '../runtime/events';
import { FakeKube } from './fake-kube';

export const TEST_SETTINGS: OperatorSettings = {
  baseDomain: 'mem.example.test',
  hostnameDomains: ['example.org'],
  gatewayNamespace: 'lore-system',
  gatewayServiceName: 'lore-gateway',
  gatewayServicePort: 80,
  ingress: { className: 'nginx', annotations: {}, tls: { mode: 'none' } },
  defaultDataRetention: 'Retain',
  memoryKeyOverlapSeconds: 60,
};

export interface RecordedEvent {
  name: string;
  type: EventType;
  reason: string;
  note: string;
}

/** A controller context over a fake API server and an in-memory platform, for unit tests of reconcilers. */
export function controllerFixture(hooks?: ControllerHooks): { ctx: ControllerContext; kube: FakeKube; admin: InMemoryPlatformAdmin; events: RecordedEvent[] } {
  const kube = new FakeKube();
  const admin = new InMemoryPlatformAdmin();
  const events: RecordedEvent[] = [];
  const recorder: EventRecorder = {
    async record(obj: KubeObject, type: EventType, reason: string, _action: string, note: string) {
      events.push({ name: String(obj.metadata.name), type, reason, note });
    },
  };
  const ctx: ControllerContext = {
    kube,
    admin,
    events: recorder,
    tenants: new TenantRegistry(admin),
    settings: TEST_SETTINGS,
    logger: createLogger({ level: 'silent', service: 'operator-test' }),
    caches: {
      namespaces: kube.cache(NAMESPACE),
      memories: kube.cache(MEMORY),
      apiKeys: kube.cache(API_KEY),
      secrets: kube.cache(SECRET),
      ingresses: kube.cache(INGRESS),
    },
    tombstones: { memories: new Tombstones(), apiKeys: new Tombstones() },
    hooks,
  };
  return { ctx, kube, admin, events };
}

export function namespace(name: string, tenant?: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: tenant ? { 'lore.dev/tenant': tenant } : {} } };
}

/** Runs a reconciler as the controller would, following immediate requeues, until it settles. */
export async function settle(reconcile: (key: string) => Promise<{ requeueAfterMs?: number } | void>, key: string, max = 10): Promise<{ requeueAfterMs?: number } | void> {
  let r: { requeueAfterMs?: number } | void;
  for (let i = 0; i < max; i++) {
    r = await reconcile(key);
    if (!r || r.requeueAfterMs === undefined || r.requeueAfterMs > 0) return r;
  }
  throw new Error(`${key} did not settle in ${max} reconciles`);
}
