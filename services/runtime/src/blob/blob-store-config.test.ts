import { z } from 'zod';
import { parseConfig } from '../config/config';
import type { Db } from '../ports/db';
import { blobStoreEnv, checkBlobStoreEnv, openBlobStore } from './blob-store-config';
import { PostgresBlobStore } from './postgres-blob-store';
import { S3BlobStore } from './s3-blob-store';

const schema = z.object(blobStoreEnv).superRefine(checkBlobStoreEnv);
const db = {} as Db;

describe('blob store config', () => {
  it('defaults to PostgreSQL', () => {
    const c = parseConfig(schema, {});
    expect(c.LORE_BLOB_STORE).toBe('postgres');
    expect(openBlobStore(c, db)).toBeInstanceOf(PostgresBlobStore);
  });

  it('opens an S3 store with the bucket, region, endpoint and path style it is given', () => {
    const c = parseConfig(schema, {
      LORE_BLOB_STORE: 's3',
      LORE_S3_BUCKET: 'lore-uploads',
      LORE_S3_ENDPOINT: 'http://minio.storage:9000',
      LORE_S3_REGION: 'eu-west-1',
      LORE_S3_FORCE_PATH_STYLE: 'true',
      LORE_S3_PREFIX: 'prod/',
    });
    const store = openBlobStore(c, db) as S3BlobStore;
    try {
      expect(store).toBeInstanceOf(S3BlobStore);
      expect(store.bucket).toBe('lore-uploads');
      expect(store.objectKey('t1', 'uploads/a')).toBe('prod/tenants/t1/uploads/a');
    } finally {
      store.close();
    }
  });

  it('lists every problem of an S3 setting at once', () => {
    expect(() =>
      parseConfig(schema, { LORE_BLOB_STORE: 's3', LORE_S3_ENDPOINT: 'minio:9000', LORE_S3_ACCESS_KEY_ID: 'id', LORE_S3_PREFIX: '/abs', LORE_S3_FORCE_PATH_STYLE: 'maybe' }),
    ).toThrow(
      expect.objectContaining({
        problems: expect.arrayContaining([
          'LORE_S3_ENDPOINT: must be an http(s) URL',
          'LORE_S3_PREFIX: must not start with "/" and must end with "/"',
          expect.stringMatching(/^LORE_S3_FORCE_PATH_STYLE: /),
        ]),
      }),
    );
    expect(() => parseConfig(schema, { LORE_BLOB_STORE: 's3', LORE_S3_ACCESS_KEY_ID: 'id' })).toThrow(
      expect.objectContaining({
        problems: expect.arrayContaining(['LORE_S3_BUCKET: is required with LORE_BLOB_STORE=s3', 'LORE_S3_SECRET_ACCESS_KEY: LORE_S3_ACCESS_KEY_ID and LORE_S3_SECRET_ACCESS_KEY are set together or not at all']),
      }),
    );
    expect(() => parseConfig(schema, { LORE_BLOB_STORE: 'gcs' })).toThrow(expect.objectContaining({ problems: [expect.stringMatching(/^LORE_BLOB_STORE: /)] }));
  });
});
