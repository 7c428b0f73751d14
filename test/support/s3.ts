import { randomBytes } from 'node:crypto';
import { DeleteObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { S3BlobStoreSettings } from '../../services/runtime/src/blob/s3-blob-store';
import { requireEnv } from './infra';

/**
 * The S3-compatible test server started by `test/infra/up.sh s3` (gofakes3, in memory). Each caller gets its own
 * key prefix, so suites sharing the bucket never see each other's objects.
 */
export function testS3Settings(): S3BlobStoreSettings & { endpoint: string; prefix: string } {
  return {
    endpoint: requireEnv('LORE_TEST_S3_ENDPOINT'),
    bucket: requireEnv('LORE_TEST_S3_BUCKET'),
    region: process.env.LORE_TEST_S3_REGION ?? 'us-east-1',
    forcePathStyle: true,
    accessKeyId: process.env.LORE_TEST_S3_ACCESS_KEY_ID ?? 'lore-test',
    secretAccessKey: process.env.LORE_TEST_S3_SECRET_ACCESS_KEY ?? 'lore-test-secret',
    prefix: `test-${randomBytes(6).toString('hex')}/`,
  };
}

/** The same environment a service reads (LORE_BLOB_STORE=s3 and its LORE_S3_* settings). */
export function s3ServiceEnv(s: ReturnType<typeof testS3Settings>): Record<string, string> {
  return {
    LORE_BLOB_STORE: 's3',
    LORE_S3_ENDPOINT: s.endpoint,
    LORE_S3_BUCKET: s.bucket,
    LORE_S3_REGION: s.region,
    LORE_S3_FORCE_PATH_STYLE: 'true',
    LORE_S3_ACCESS_KEY_ID: s.accessKeyId!,
    LORE_S3_SECRET_ACCESS_KEY: s.secretAccessKey!,
    LORE_S3_PREFIX: s.prefix,
  };
}

/** A plain client of the test server, to look at the bucket the way an operator would. */
export function rawS3Client(s: ReturnType<typeof testS3Settings>): S3Client {
  return new S3Client({
    endpoint: s.endpoint,
    region: s.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s.accessKeyId!, secretAccessKey: s.secretAccessKey! },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/** Every object key under `prefix` in the bucket. */
export async function listObjectKeys(client: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const r = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }));
    for (const o of r.Contents ?? []) if (o.Key) keys.push(o.Key);
    token = r.IsTruncated ? r.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

/** Deletes every object under `prefix` (a suite's own), so the long-running test server does not grow run after run. */
export async function emptyPrefix(client: S3Client, bucket: string, prefix: string): Promise<void> {
  for (const key of await listObjectKeys(client, bucket, prefix)) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
}
