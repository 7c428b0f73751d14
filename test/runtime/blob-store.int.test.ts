import { createHash, randomBytes } from 'node:crypto';
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { describeBlobStoreContract } from '../../services/runtime/src/blob/blob-store.contract';
import { PostgresBlobStore } from '../../services/runtime/src/blob/postgres-blob-store';
import { S3BlobStore } from '../../services/runtime/src/blob/s3-blob-store';
import { runRuntimeMigrations } from '../../services/runtime/src/outbox/outbox';
import { emptyPrefix, listObjectKeys, rawS3Client, testS3Settings } from '../support/s3';
import { freshPostgresDb } from './support';

jest.setTimeout(120_000);

describeBlobStoreContract('PostgresBlobStore on a real PostgreSQL server', async () => {
  const pg = await freshPostgresDb();
  await runRuntimeMigrations(pg.db);
  return { store: new PostgresBlobStore(pg.db), close: () => pg.close() };
});

describeBlobStoreContract('S3BlobStore on a real S3-compatible server', async () => {
  const settings = testS3Settings();
  const store = new S3BlobStore(settings);
  const raw = rawS3Client(settings);
  return {
    store,
    close: async () => {
      await emptyPrefix(raw, settings.bucket, settings.prefix);
      raw.destroy();
      store.close();
    },
  };
});

describe('S3BlobStore in the bucket', () => {
  const settings = testS3Settings();
  const store = new S3BlobStore(settings);
  const raw = rawS3Client(settings);
  afterAll(async () => {
    await emptyPrefix(raw, settings.bucket, settings.prefix);
    store.close();
    raw.destroy();
  });

  it('writes each blob under <prefix>tenants/<tenant>/<key>, with its SHA-256 and content type on the object', async () => {
    const data = randomBytes(10_000);
    await store.put('tenant/one', 'uploads/u1', data, 'application/pdf');
    expect(await listObjectKeys(raw, settings.bucket, settings.prefix)).toEqual([`${settings.prefix}tenants/tenant%2Fone/uploads/u1`]);
    const head = await raw.send(new HeadObjectCommand({ Bucket: settings.bucket, Key: store.objectKey('tenant/one', 'uploads/u1') }));
    expect(head.ContentType).toBe('application/pdf');
    expect(Number(head.ContentLength)).toBe(10_000);
    expect(head.Metadata?.['lore-sha256']).toBe(createHash('sha256').update(data).digest('hex'));
    const body = await raw.send(new GetObjectCommand({ Bucket: settings.bucket, Key: store.objectKey('tenant/one', 'uploads/u1') }));
    expect(Buffer.compare(Buffer.from(await body.Body!.transformToByteArray()), data)).toBe(0);
  });

  it('refuses to hand back bytes that no longer match their SHA-256', async () => {
    await store.put('t-tamper', 'k', Buffer.from('original bytes'), 'text/plain');
    const original = await raw.send(new HeadObjectCommand({ Bucket: settings.bucket, Key: store.objectKey('t-tamper', 'k') }));
    await raw.send(new PutObjectCommand({ Bucket: settings.bucket, Key: store.objectKey('t-tamper', 'k'), Body: Buffer.from('damaged bytes!'), Metadata: original.Metadata }));
    await expect(store.get('t-tamper', 'k')).rejects.toThrow(/do not match their SHA-256/);
  });

  it('writes nothing when the body is over the limit', async () => {
    await expect(store.put('t-big', 'big', randomBytes(2048), 'application/octet-stream', 1024)).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(await listObjectKeys(raw, settings.bucket, `${settings.prefix}tenants/t-big/`)).toEqual([]);
  });

  it('is ready when the bucket answers, and not ready (saying which bucket) when it is missing', async () => {
    expect(await store.check()).toEqual({ ok: true });
    const missing = new S3BlobStore({ ...settings, bucket: `missing-${randomBytes(4).toString('hex')}` });
    try {
      const r = await missing.check();
      expect(r.ok).toBe(false);
      expect(r.details).toMatchObject({ bucket: missing.bucket });
      await expect(missing.put('t', 'k', Buffer.from('x'), 'text/plain')).rejects.toThrow();
    } finally {
      missing.close();
    }
  });

  it('fails a put when the server cannot be reached, instead of reporting it stored', async () => {
    const down = new S3BlobStore({ ...settings, endpoint: 'http://127.0.0.1:9', requestTimeoutMs: 2_000 });
    try {
      await expect(down.put('t', 'k', Buffer.from('x'), 'text/plain')).rejects.toThrow();
      expect((await down.check()).ok).toBe(false);
    } finally {
      down.close();
    }
  });
});
