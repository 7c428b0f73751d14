/**
 * Cluster mode with the S3-compatible blob store: the graph API and the graph worker run as their own processes
 * (from dist/, as the image runs them) with LORE_BLOB_STORE=s3 against the S3 test server (test/infra/up.sh s3).
 * An upload's bytes go to the bucket and never to PostgreSQL; the worker reads them back from the bucket, extracts
 * and indexes them, then removes them (docs/configuration.md, "Blob store").
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { IDENTITY_HEADER, IdentitySigner, type Identity } from '@lore/runtime';
import { asSuperuser } from '../support/install';
import { freshDatabase, requireEnv, uniqueSuffix, type TestDatabase } from '../support/infra';
import { listObjectKeys, rawS3Client, s3ServiceEnv, testS3Settings } from '../support/s3';
import { buildService, freePort, startProcess, stopProcess, until, type Started } from './processes';

jest.setTimeout(240_000);

const ROOT = join(__dirname, '..', '..');

describe('graph in cluster mode with LORE_BLOB_STORE=s3', () => {
  const s3 = testS3Settings();
  const raw = rawS3Client(s3);
  const secret = 'an identity secret of the s3 blob store suite';
  const signer = new IdentitySigner(secret);
  const run = uniqueSuffix();
  const who: Identity = { tenant_id: `t_s3_${run}`, workspace_id: `ws_${run}`, memory_id: `mem_${run}`, credential: 'ck_test', subject: `key_${run}`, role: 'admin' };
  const tenantPrefix = `${s3.prefix}tenants/${encodeURIComponent(who.tenant_id)}/`;
  const home = mkdtempSync(join(tmpdir(), 'lore-s3-home-'));
  let db: TestDatabase;
  let api: Started | undefined;
  let worker: Started | undefined;
  let apiUrl: string;
  let workerUrl: string;

  const env = (port: number, extra: Record<string, string>) => ({
    PATH: process.env.PATH ?? '',
    HOME: home,
    LORE_LOG_LEVEL: 'info',
    LORE_DATABASE_URL: db.url,
    LORE_DATABASE_OWNER_URL: db.ownerUrl,
    LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
    LORE_IDENTITY_SECRET: secret,
    LORE_EMBEDDER: 'hashed',
    LORE_GRAPH_HOST: '127.0.0.1',
    LORE_GRAPH_PORT: String(port),
    LORE_GRAPH_WORKER_PORT: String(port),
    LORE_GRAPH_CONSUMER_GROUP: `graph-worker-s3-${run}`,
    ...s3ServiceEnv(s3),
    ...extra,
  });
  const identity = async () => ({ [IDENTITY_HEADER]: await signer.sign(who) });

  beforeAll(async () => {
    buildService('graph');
    db = await freshDatabase('lore_e2e_s3');
    const port = await freePort();
    apiUrl = `http://127.0.0.1:${port}`;
    api = startProcess(process.execPath, ['services/graph/dist/main.js'], { cwd: ROOT, env: env(port, { LORE_GRAPH_MIGRATE: 'true' }) });
    await until('graph /readyz', async () => ((await fetch(`${apiUrl}/readyz`)).status === 200 ? true : undefined), 90_000, api);
  });
  afterAll(async () => {
    if (worker) await stopProcess(worker);
    if (api) await stopProcess(api);
    await db?.drop();
    raw.destroy();
    rmSync(home, { recursive: true, force: true });
  });

  it("reports the bucket in the API's readiness", async () => {
    const r = await fetch(`${apiUrl}/readyz`);
    expect(r.status).toBe(200);
    expect(JSON.stringify(await r.json())).toContain('"blob store":{"ok":true}');
  });

  it('keeps the upload in the bucket, not in PostgreSQL, and the worker extracts and indexes it from there', async () => {
    const phrase = `The Kestrel ${run} depot keeps its spare rotor blades in hangar nine.`;
    const bytes = Buffer.from(`${phrase}\n\nVisitors sign in at the north gate.\n`);
    const form = new FormData();
    form.append('file', new Blob([bytes], { type: 'text/plain' }), 'kestrel.txt');
    const res = await fetch(`${apiUrl}/api/v1/memory/uploads`, { method: 'POST', headers: await identity(), body: form });
    expect(res.status).toBe(202);
    const { upload_id } = (await res.json()) as { upload_id: string };

    // No worker runs yet: the bytes wait in the bucket, under the tenant's prefix, exactly as sent.
    const keys = await listObjectKeys(raw, s3.bucket, tenantPrefix);
    expect(keys).toHaveLength(1);
    const obj = await raw.send(new GetObjectCommand({ Bucket: s3.bucket, Key: keys[0]! }));
    expect(Buffer.from(await obj.Body!.transformToByteArray()).equals(bytes)).toBe(true);

    // ...and PostgreSQL holds the upload's row, naming that object, but none of its bytes. `row_security = off`
    // makes PostgreSQL fail the query rather than filter rows, so a count of 0 is not a policy hiding them.
    const pg = await asSuperuser(db.name, async (c) => {
      await c.query('SET row_security = off');
      const blobs = await c.query<{ n: string }>('SELECT count(*) AS n FROM runtime.blobs');
      const upload = await c.query<{ blob_key: string; size_bytes: string }>('SELECT blob_key, size_bytes FROM graph.uploads WHERE upload_id = $1', [upload_id]);
      return { blobs: Number(blobs.rows[0]!.n), upload: upload.rows[0] };
    });
    expect(pg.blobs).toBe(0);
    expect(keys[0]).toBe(`${tenantPrefix}${pg.upload!.blob_key}`);
    expect(Number(pg.upload!.size_bytes)).toBe(bytes.length);

    // The worker reads the bytes back from the bucket, extracts and indexes them.
    const port = await freePort();
    workerUrl = `http://127.0.0.1:${port}`;
    worker = startProcess(process.execPath, ['services/graph/dist/worker-main.js'], { cwd: ROOT, env: env(port, {}) });
    await until('graph-worker /readyz', async () => ((await fetch(`${workerUrl}/readyz`)).status === 200 ? true : undefined), 90_000, worker);
    const done = await until(
      'the upload to settle',
      async () => {
        const r = await fetch(`${apiUrl}/api/v1/memory/uploads/${upload_id}`, { headers: await identity() });
        const body = (await r.json()) as { status: string; doc_id: string | null; extractor: string | null; error: string | null };
        return body.status === 'completed' || body.status === 'failed' ? body : undefined;
      },
      120_000,
      worker,
    );
    expect(done).toMatchObject({ status: 'completed', extractor: 'text', error: null, doc_id: expect.any(String) });
    await until(
      'the document to be indexed',
      async () => {
        const r = await fetch(`${apiUrl}/api/v1/memory/documents/${done.doc_id}`, { headers: await identity() });
        return ((await r.json()) as { status?: string }).status === 'indexed' ? true : undefined;
      },
      120_000,
      worker,
    );
    const found = await fetch(`${apiUrl}/api/v1/memory/retrieve`, {
      method: 'POST',
      headers: { ...(await identity()), 'content-type': 'application/json' },
      body: JSON.stringify({ query: `Kestrel ${run} rotor blades` }),
    });
    expect(found.status).toBe(200);
    const chunks = ((await found.json()) as { chunks: Array<{ document_id: string; content: string }> }).chunks;
    expect(chunks.find((c) => c.document_id === done.doc_id)?.content).toContain(phrase);

    // Extracted, the upload's bytes are no longer kept: the bucket's prefix for the tenant is empty again.
    await until('the extracted upload to leave the bucket', async () => ((await listObjectKeys(raw, s3.bucket, tenantPrefix)).length === 0 ? true : undefined), 30_000, worker);
  });
});
