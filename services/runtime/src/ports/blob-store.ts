import type { Readable } from 'node:stream';

export interface BlobInfo {
  key: string;
  size: number;
  contentType: string;
  sha256: string;
  createdAt: Date;
}

/** Opaque bytes (uploads). Keys are namespaced by tenant by the callers: `<tenant>/<kind>/<id>`. */
export interface BlobStore {
  readonly kind: 'postgres' | 's3' | 'memory' | 'file';
  put(tenantId: string, key: string, data: Buffer | Readable, contentType: string, maxBytes?: number): Promise<BlobInfo>;
  get(tenantId: string, key: string): Promise<{ info: BlobInfo; data: Buffer } | null>;
  /** What is known of those of `keys` that exist, without their bytes (any order; missing keys are left out). */
  stat(tenantId: string, keys: readonly string[]): Promise<BlobInfo[]>;
  delete(tenantId: string, key: string): Promise<void>;
}
