import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import type { BlobInfo, BlobStore } from '../ports/blob-store';
import { MAX_BLOB_BYTES, readBody } from './read-body';

export interface S3BlobStoreSettings {
  /** `https://s3.eu-west-1.amazonaws.com`, a MinIO or Ceph address...; unset: the region's AWS endpoint. */
  endpoint?: string;
  bucket: string;
  region: string;
  /** `https://endpoint/bucket/key` instead of `https://bucket.endpoint/key` (MinIO, Ceph and most others need it). */
  forcePathStyle: boolean;
  /** Static credentials; unset: the AWS SDK's default chain (environment, web identity / IRSA, instance profile). */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Prepended to every object key (`lore/`), so one bucket can hold several installations. */
  prefix?: string;
  /** Per request; a stalled connection fails instead of holding an upload forever. */
  requestTimeoutMs?: number;
}

/** Object metadata (`x-amz-meta-*`) the store writes and reads back. */
const META_SHA256 = 'lore-sha256';
const META_CREATED = 'lore-created-at';
/** HEAD requests in flight at once for one `stat`. */
const STAT_CONCURRENCY = 8;

/**
 * Blobs in an S3-compatible bucket (AWS S3, MinIO, Ceph RGW, R2, ...). Each object is
 * `<prefix>tenants/<url-encoded tenant>/<key>`: the tenant is part of the object's name, so one tenant's key can never
 * name another tenant's object whatever the key holds. The SHA-256 and the creation time travel as object metadata;
 * `get` checks the bytes against the SHA-256 and fails loudly on a mismatch rather than hand back damaged bytes.
 *
 * A put is one PutObject of the whole body (read with the size limit first): S3 makes an object visible only once it
 * is complete, so a reader never sees half a blob, and a failed put leaves the old object (or none).
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const;
  readonly bucket: string;
  private readonly client: S3Client;
  private readonly prefix: string;

  constructor(settings: S3BlobStoreSettings) {
    this.bucket = settings.bucket;
    this.prefix = settings.prefix ?? '';
    this.client = new S3Client({
      region: settings.region,
      forcePathStyle: settings.forcePathStyle,
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      ...(settings.accessKeyId && settings.secretAccessKey ? { credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey } } : {}),
      // Integrity is checked with our own SHA-256; the SDK's default CRC checksums are not served by every
      // S3-compatible server, so they are sent and checked only where an operation requires them.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { requestTimeout: settings.requestTimeoutMs ?? 60_000, connectionTimeout: 10_000 },
      maxAttempts: 3,
    });
  }

  /** The object key of a tenant's blob (tests read the bucket with it). */
  objectKey(tenantId: string, key: string): string {
    if (!tenantId) throw new Error('a blob needs a tenant');
    return `${this.prefix}tenants/${encodeURIComponent(tenantId)}/${key}`;
  }

  async put(tenantId: string, key: string, data: Buffer | Readable, contentType: string, maxBytes = MAX_BLOB_BYTES): Promise<BlobInfo> {
    if (!key) throw new Error('a blob needs a key');
    const bytes = await readBody(data, Math.min(maxBytes, MAX_BLOB_BYTES));
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const createdAt = new Date();
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.objectKey(tenantId, key),
        Body: bytes,
        ContentLength: bytes.length,
        ContentType: contentType,
        Metadata: { [META_SHA256]: sha256, [META_CREATED]: createdAt.toISOString() },
      }),
    );
    return { key, size: bytes.length, contentType, sha256, createdAt };
  }

  async get(tenantId: string, key: string): Promise<{ info: BlobInfo; data: Buffer } | null> {
    let r;
    try {
      r = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(tenantId, key) }));
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
    const data = Buffer.from(await r.Body!.transformToByteArray());
    const info = toInfo(key, data.length, r.ContentType, r.Metadata, r.LastModified);
    const actual = createHash('sha256').update(data).digest('hex');
    if (info.sha256 && actual !== info.sha256) throw new Error(`blob ${key}: the bytes read do not match their SHA-256 (${actual} != ${info.sha256})`);
    return { info: { ...info, sha256: actual }, data };
  }

  async stat(tenantId: string, keys: readonly string[]): Promise<BlobInfo[]> {
    const unique = [...new Set(keys)];
    const found: BlobInfo[] = [];
    let next = 0;
    const worker = async () => {
      while (next < unique.length) {
        const key = unique[next++]!;
        try {
          const h = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(tenantId, key) }));
          found.push(toInfo(key, Number(h.ContentLength ?? 0), h.ContentType, h.Metadata, h.LastModified));
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(STAT_CONCURRENCY, unique.length) }, worker));
    return found;
  }

  async delete(tenantId: string, key: string): Promise<void> {
    // S3 answers 204 for a key that does not exist: deleting twice is fine.
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(tenantId, key) }));
  }

  /** Readiness: the bucket exists and these credentials may use it. */
  async check(): Promise<{ ok: boolean; details?: Record<string, unknown> }> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
      return { ok: true };
    } catch (err) {
      return { ok: false, details: { bucket: this.bucket, error: err instanceof S3ServiceException ? `${err.name} (${err.$metadata.httpStatusCode ?? '?'})` : String(err) } };
    }
  }

  close(): void {
    this.client.destroy();
  }
}

function isNotFound(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata.httpStatusCode === 404);
}

function toInfo(key: string, size: number, contentType: string | undefined, meta: Record<string, string> | undefined, lastModified: Date | undefined): BlobInfo {
  const created = meta?.[META_CREATED] ? new Date(meta[META_CREATED]) : undefined;
  return {
    key,
    size,
    contentType: contentType ?? 'application/octet-stream',
    sha256: meta?.[META_SHA256] ?? '',
    createdAt: created && !Number.isNaN(created.getTime()) ? created : (lastModified ?? new Date(0)),
  };
}
