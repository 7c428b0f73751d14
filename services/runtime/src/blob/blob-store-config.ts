import { z } from 'zod';
import { envBool, envInt } from '../config/config';
import type { Lifecycle } from '../lifecycle/lifecycle';
import type { BlobStore } from '../ports/blob-store';
import type { Db } from '../ports/db';
import { PostgresBlobStore } from './postgres-blob-store';
import type { S3BlobStore } from './s3-blob-store';

const optional = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

/**
 * The blob store's environment, the same in every process that keeps uploads (graph, core, agents and their
 * workers): spread it into the process's config schema and call `checkBlobStoreEnv` in its `superRefine`.
 */
export const blobStoreEnv = {
  /** `postgres` (default; `runtime.blobs` in the service's database) or `s3` (an S3-compatible bucket). */
  LORE_BLOB_STORE: z.enum(['postgres', 's3']).default('postgres'),
  LORE_S3_ENDPOINT: optional.refine((v) => v === undefined || /^https?:\/\/\S+$/.test(v), { message: 'must be an http(s) URL' }),
  LORE_S3_BUCKET: optional,
  LORE_S3_REGION: z.string().min(1).default('us-east-1'),
  LORE_S3_FORCE_PATH_STYLE: envBool(false),
  LORE_S3_ACCESS_KEY_ID: optional,
  LORE_S3_SECRET_ACCESS_KEY: optional,
  LORE_S3_PREFIX: optional.refine((v) => v === undefined || (!v.startsWith('/') && v.endsWith('/')), { message: 'must not start with "/" and must end with "/"' }),
  LORE_S3_REQUEST_TIMEOUT_MS: envInt(60_000, 1_000, 600_000),
};

export type BlobStoreEnv = { [K in keyof typeof blobStoreEnv]: z.infer<(typeof blobStoreEnv)[K]> };

/** The cross-field rules: a bucket for `s3`, and static credentials given whole or not at all. */
export function checkBlobStoreEnv(c: BlobStoreEnv, ctx: z.RefinementCtx): void {
  if (c.LORE_BLOB_STORE !== 's3') return;
  if (!c.LORE_S3_BUCKET) ctx.addIssue({ code: 'custom', path: ['LORE_S3_BUCKET'], message: 'is required with LORE_BLOB_STORE=s3' });
  if (Boolean(c.LORE_S3_ACCESS_KEY_ID) !== Boolean(c.LORE_S3_SECRET_ACCESS_KEY)) {
    ctx.addIssue({ code: 'custom', path: ['LORE_S3_SECRET_ACCESS_KEY'], message: 'LORE_S3_ACCESS_KEY_ID and LORE_S3_SECRET_ACCESS_KEY are set together or not at all' });
  }
}

/**
 * The process's blob store, as its config says. With `s3` the bucket becomes a readiness check (`blob store`) and
 * the client closes at shutdown; with `postgres` the blobs share the process's database.
 */
export function openBlobStore(config: BlobStoreEnv, db: Db, lifecycle?: Lifecycle): BlobStore {
  if (config.LORE_BLOB_STORE === 'postgres') return new PostgresBlobStore(db);
  return openS3BlobStore(config, lifecycle);
}

/** Required here, not at the top: a process on the PostgreSQL store never loads the AWS SDK (a third of a second). */
function openS3BlobStore(config: BlobStoreEnv, lifecycle?: Lifecycle): S3BlobStore {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { S3BlobStore: Store } = require('./s3-blob-store') as typeof import('./s3-blob-store');
  const store = new Store({
    ...(config.LORE_S3_ENDPOINT ? { endpoint: config.LORE_S3_ENDPOINT } : {}),
    bucket: config.LORE_S3_BUCKET!,
    region: config.LORE_S3_REGION,
    forcePathStyle: config.LORE_S3_FORCE_PATH_STYLE,
    ...(config.LORE_S3_ACCESS_KEY_ID ? { accessKeyId: config.LORE_S3_ACCESS_KEY_ID, secretAccessKey: config.LORE_S3_SECRET_ACCESS_KEY! } : {}),
    ...(config.LORE_S3_PREFIX ? { prefix: config.LORE_S3_PREFIX } : {}),
    requestTimeoutMs: config.LORE_S3_REQUEST_TIMEOUT_MS,
  });
  if (lifecycle) {
    lifecycle.addCheck('blob store', () => store.check());
    lifecycle.onShutdown('blob store', async () => store.close());
  }
  return store;
}
