import type { KeyAccess, KeyType, Module } from '@lore/contracts';
import type { Condition, KubeObject } from '../kube/types';

export interface MemorySpec {
  hostname?: string;
  displayName?: string;
  workspaceId?: string;
  dataRetention?: 'Retain' | 'Delete';
  keySecretName?: string;
  ingress?: { enabled?: boolean };
}

export interface MemoryStatus {
  observedGeneration?: number;
  tenantId?: string;
  memoryId?: string;
  hostname?: string;
  workspaceId?: string;
  keySecretName?: string;
  keyId?: string;
  pendingKeyId?: string;
  pendingKeyToken?: string;
  ingressName?: string;
  conditions?: Condition[];
}

export type MemoryObject = KubeObject & { spec?: MemorySpec; status?: MemoryStatus };

export interface ApiKeySpec {
  type: KeyType;
  memoryRef?: { name: string };
  secretName: string;
  displayName?: string;
  /** The CRD's schema admits only the platform's modules (`MODULES`). `memories` names Memory objects. */
  scopes?: { modules?: Module[]; memories?: string[]; access?: KeyAccess };
  ipAllowlist?: string[];
  /** app → operations (`["*"]` all, `[]` none), passed to the platform as app_permissions. */
  appPermissions?: Record<string, string[]>;
  expiresAt?: string;
  rotationRequest?: string;
  rotationOverlapSeconds?: number;
}

export interface ApiKeyStatus {
  observedGeneration?: number;
  tenantId?: string;
  keyId?: string;
  prefix?: string;
  pendingKeyId?: string;
  pendingKeyToken?: string;
  memoryId?: string;
  hostname?: string;
  expiresAt?: string;
  previousKeyId?: string;
  previousKeyExpiresAt?: string;
  lastRotationRequest?: string;
  rotatedAt?: string;
  conditions?: Condition[];
}

export type ApiKeyObject = KubeObject & { spec?: ApiKeySpec; status?: ApiKeyStatus };

export type SecretObject = KubeObject & { type?: string; data?: Record<string, string> };

export type NamespaceObject = KubeObject;

export type IngressObject = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

/** Read access to an informer's cache (the `Informer` class, or a map in unit tests). */
export interface ObjectCache<T extends KubeObject> {
  get(namespace: string | undefined, name: string): T | undefined;
  list(filter?: (obj: T) => boolean): T[];
}
