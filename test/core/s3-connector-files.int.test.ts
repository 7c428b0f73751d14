/**
 * `file` connector files with the S3-compatible blob store: graph and core keep their files
 * in the S3 test server's bucket (test/infra/up.sh s3), through the gateway on real PostgreSQL, Redis and Kafka.
 * The bytes are in the bucket under the tenant's prefix and nowhere in PostgreSQL; the indexer reads them back from
 * there; deleting the connector deletes them from the bucket.
 */
import { randomUUID } from 'node:crypto';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { pdfWithText } from '@lore/extract/scan-pdf';
import { S3BlobStore } from '../../services/runtime/src/blob/s3-blob-store';
import { multipart } from '../e2e/processes';
import type { TenantFixture } from '../gateway/harness';
import { closeIdleHttpConnections, http } from '../support/http';
import { listObjectKeys, rawS3Client, testS3Settings } from '../support/s3';
import { uniqueSuffix } from '../support/infra';
import { type CoreStack, eventually, startCoreStack } from './harness';

jest.setTimeout(120_000);

type Json = Record<string, any>;
const as = (key: string) => ({ authorization: `Bearer ${key}` });


describe('core: connector files in an S3 bucket', () => {
  const settings = testS3Settings();
  const raw = rawS3Client(settings);
  const stores: S3BlobStore[] = [];
  let s: CoreStack;
  let a: TenantFixture;
  const prefixOf = (tenantId: string) => `${settings.prefix}tenants/${encodeURIComponent(tenantId)}/`;

  beforeAll(async () => {
    s = await startCoreStack({
      indexer: {},
      blobs: () => {
        const store = new S3BlobStore(settings);
        stores.push(store);
        return store;
      },
    });
    a = await s.tenant();
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    for (const store of stores) store.close();
    raw.destroy();
    closeIdleHttpConnections();
  });

  it('keeps the uploaded files in the bucket only, indexes them from there, and deletes them with the connector', async () => {
    const pdf = pdfWithText(['Harbour log', `The lighthouse keeper ${uniqueSuffix()} records the brass buoy vellarune at dawn.`]);
    const boundary = `lore-${randomUUID()}`;
    const up = await http(s.gateway.publicUrl, 'POST', '/api/manage/admin/connector/file/upload', {
      headers: { ...as(a.key), 'content-type': `multipart/form-data; boundary=${boundary}` },
      raw: multipart(boundary, [{ name: 'files', filename: 'harbour.pdf', type: 'application/pdf', data: pdf }]),
    });
    expect(up.status).toBe(200);
    const [path] = up.json.file_paths as string[];

    // In the bucket, byte for byte, under the tenant's prefix...
    expect(await listObjectKeys(raw, settings.bucket, prefixOf(a.tenantId))).toEqual([`${prefixOf(a.tenantId)}${path}`]);
    const obj = await raw.send(new GetObjectCommand({ Bucket: settings.bucket, Key: `${prefixOf(a.tenantId)}${path}` }));
    expect(Buffer.from(await obj.Body!.transformToByteArray()).equals(pdf)).toBe(true);
    // ...and not in PostgreSQL (read as the tenant, where its own rows would show).
    const inPg = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: number }>('SELECT count(*)::int AS n FROM runtime.blobs WHERE tenant_id = $1', [a.tenantId]));
    expect(inPg.rows[0]!.n).toBe(0);

    const created = await s.call('POST', '/api/manage/admin/connector', as(a.key), {
      name: `Harbour ${uniqueSuffix()}`, source: 'file', input_type: 'load_state', connector_specific_config: { file_locations: [path] }, access_type: 'public',
    });
    expect(created.status).toBe(200);
    const credential = await s.call('POST', '/api/manage/credential', as(a.key), { name: `files ${uniqueSuffix()}`, source: 'file', credential_json: {} });
    expect(credential.status).toBe(201);
    const pair = await s.call('PUT', `/api/manage/connector/${created.json.id}/credential/${credential.json.id}`, as(a.key), {});
    expect(pair.status).toBe(200);
    const run = await s.call('POST', '/api/manage/admin/connector/run-once', as(a.key), { connector_id: created.json.id });
    expect(run.status).toBe(200);
    const attempt = await eventually('the index attempt to end', async () => {
      const r = await s.call('GET', `/api/manage/admin/cc-pair/${pair.json.id}/index-attempts`, as(a.key));
      const found = (r.json.index_attempts as Json[]).find((x) => x.id === run.json.attempts[0].id);
      return found && !['not_started', 'in_progress'].includes(found.status as string) ? found : undefined;
    });
    expect(attempt).toMatchObject({ status: 'success', new_docs_indexed: 1, error_msg: null });
    const chunk = await eventually('the PDF\'s words in the memory', async () => {
      const r = await s.call('POST', '/api/v1/memory/retrieve', { 'x-api-key': a.key }, { query: 'brass buoy vellarune', source_types: ['file'] });
      return (r.json.chunks as Json[]).find((c) => String(c.content).includes('vellarune'));
    });
    expect(chunk).toMatchObject({ source_type: 'file', title: 'harbour.pdf' });

    // The last connector naming the file goes: so does the object.
    const del = await s.call('POST', '/api/manage/admin/deletion-attempt', as(a.key), { connector_id: created.json.id, credential_id: credential.json.id });
    expect(del.status).toBe(200);
    await eventually('the file to leave the bucket', async () => (await listObjectKeys(raw, settings.bucket, prefixOf(a.tenantId))).length === 0);
  });
});
