/**
 * Agents' CSV imports with the S3-compatible blob store (test/infra/up.sh s3), through the gateway on real
 * PostgreSQL: the uploaded file is kept in the bucket under the tenant's prefix and nowhere in PostgreSQL, and the
 * import reads it back from there on review.
 */
import { randomUUID } from 'node:crypto';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { S3BlobStore } from '../../services/runtime/src/blob/s3-blob-store';
import { multipart } from '../e2e/processes';
import type { TenantFixture } from '../gateway/harness';
import { http } from '../support/http';
import { emptyPrefix, listObjectKeys, rawS3Client, testS3Settings } from '../support/s3';
import { startAgentsStack, type AgentsStack } from './harness';

jest.setTimeout(120_000);

type Json = Record<string, any>;
const as = (key: string) => ({ authorization: `Bearer ${key}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const CSV = ['Company,Website,Country', 'Acme GmbH,https://www.acme.de,DE', 'Kestrel Labs,kestrel.io,FR'].join('\r\n');

describe('CSV import with the file in an S3 bucket', () => {
  const settings = testS3Settings();
  const raw = rawS3Client(settings);
  const store = new S3BlobStore(settings);
  let s: AgentsStack;
  let a: TenantFixture;

  beforeAll(async () => {
    s = await startAgentsStack({ service: { blobs: store, csvImport: { batchSize: 1, sweepIntervalMs: 250, leaseMs: 10_000 } } });
    a = await s.tenant();
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await emptyPrefix(raw, settings.bucket, settings.prefix);
    store.close();
    raw.destroy();
  });

  it('keeps the file in the bucket only and imports its rows from there', async () => {
    const boundary = `lore-${randomUUID()}`;
    const up = await http(s.gateway.publicUrl, 'POST', '/api/lists/csv/upload', {
      headers: { ...as(a.key), 'content-type': `multipart/form-data; boundary=${boundary}` },
      raw: multipart(boundary, [{ name: 'file', filename: 'fair.csv', type: 'text/csv', data: CSV }]),
    });
    expect(up.status).toBe(200);
    const events = up.text.split('\n\n').map((c) => c.trim()).filter((c) => c.startsWith('data: ')).map((c) => JSON.parse(c.slice(6)) as Json);
    const threadId = events[0]!.thread_id as string;
    expect(events[events.length - 1]!.status).toBe('ready_for_review');

    const prefix = `${settings.prefix}tenants/${encodeURIComponent(a.tenantId)}/`;
    const key = `${prefix}csv-imports/${threadId}/fair.csv`;
    expect(await listObjectKeys(raw, settings.bucket, prefix)).toEqual([key]);
    const obj = await raw.send(new GetObjectCommand({ Bucket: settings.bucket, Key: key }));
    expect(Buffer.from(await obj.Body!.transformToByteArray()).toString()).toBe(CSV);
    const inPg = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: number }>('SELECT count(*)::int AS n FROM runtime.blobs WHERE tenant_id = $1', [a.tenantId]));
    expect(inPg.rows[0]!.n).toBe(0);

    const review = await s.call('POST', `/api/lists/csv/review/${threadId}`, as(a.key), { listName: 'Fair', category: 'companies' });
    expect(review.status).toBe(200);
    const deadline = Date.now() + 30_000;
    let status: Json;
    for (;;) {
      status = (await s.call('GET', `/api/lists/csv/status/${threadId}`, as(a.key))).json as Json;
      if (status.status === 'completed' || status.status === 'error' || Date.now() > deadline) break;
      await sleep(100);
    }
    expect(status).toMatchObject({ status: 'completed', total_rows: 2, imported_rows: 2, errors: [] });
  });
});
