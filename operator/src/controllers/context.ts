import type { Logger } from '@lore/runtime/kit';
import type { KubeClient } from '../kube/client';
import type { PlatformAdmin } from '../platform/admin-client';
import type { EventRecorder } from '../runtime/events';
import type { ControllerHooks, OperatorSettings } from './settings';
import type { TenantRegistry } from './tenant';
import type { Tombstones } from './tenant-reconciler';
import type { ApiKeyObject, IngressObject, MemoryObject, NamespaceObject, ObjectCache, SecretObject } from './types';

/** Everything a Lore controller works with; built once by the operator (or by a unit test). */
export interface ControllerContext {
  kube: KubeClient;
  admin: PlatformAdmin;
  events: EventRecorder;
  tenants: TenantRegistry;
  settings: OperatorSettings;
  logger: Logger;
  caches: {
    namespaces: ObjectCache<NamespaceObject>;
    memories: ObjectCache<MemoryObject>;
    apiKeys: ObjectCache<ApiKeyObject>;
    secrets: ObjectCache<SecretObject>;
    ingresses: ObjectCache<IngressObject>;
  };
  /** Objects that vanished before their cleanup ran, per kind: fed by the watches' DELETED events and by the reconcilers. */
  tombstones: { memories: Tombstones<MemoryObject>; apiKeys: Tombstones<ApiKeyObject> };
  /** A memory's hostname was released (deleted, or moved to another): Memories waiting for a hostname look again. */
  onHostnameFreed?: () => void;
  hooks?: ControllerHooks;
  now?: () => Date;
}
