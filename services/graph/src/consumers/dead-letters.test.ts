import { PostgresBlobStore, type BlobStore, type BusMessage, type Identity, type PgliteDb } from '@lore/runtime';
import { TOPICS } from '@lore/contracts';
import { startGraphTestStack, type GraphTestStack } from '../test-stack';

/**
 * What a message stood for is failed when the bus dead-letters it (docs/runtime.md, "Poison messages"): a graph job
 * or an upload whose handler kept failing for a reason that is neither the input's nor the database's (here: the
 * blob store refusing every read) must not stay `running`/`extracting` for good, nor its graph `building`.
 */
describe('dead-lettered graph jobs and uploads (PGlite, in-process bus)', () => {
  let stack: GraphTestStack;
  let brokenReads = true;
  const dead: BusMessage[] = [];
  const who: Identity = { tenant_id: 't_dead', workspace_id: 'ws_dead', memory_id: 'm_dead', credential: 'ck_test', subject: 'key_dead', role: 'admin' };

  /** The database's blob store, refusing every read while `brokenReads` holds. */
  const failingReads = (on: PgliteDb): BlobStore => {
    const stored = new PostgresBlobStore(on);
    return {
      kind: stored.kind,
      put: (...a) => stored.put(...a),
      stat: (...a) => stored.stat(...a),
      delete: (...a) => stored.delete(...a),
      get: async (tenantId, key) => {
        if (brokenReads) throw new Error('the storage refused the read');
        return stored.get(tenantId, key);
      },
    };
  };

  beforeAll(async () => {
    stack = await startGraphTestStack('dead-letters', { bus: { maxAttempts: 2, handlerRetry: { initialMs: 5, maxMs: 10 } }, blobs: failingReads });
    await stack.bus.subscribe({ groupId: 'dead-watch', topics: [TOPICS.dead], fromBeginning: true }, async (m) => {
      dead.push(m);
    });
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
  });

  const call = async (method: string, path: string, body?: FormData | object) => {
    const headers: Record<string, string> = await stack.identify(who);
    if (body && !(body instanceof FormData)) headers['content-type'] = 'application/json';
    const res = await fetch(`${stack.server.url}${path}`, { method, headers, body: body instanceof FormData ? body : body ? JSON.stringify(body) : undefined });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  const until = async <T>(what: string, read: () => Promise<T>, done: (v: T) => boolean): Promise<T> => {
    for (const deadline = Date.now() + 30_000; ; ) {
      const v = await read();
      if (done(v)) return v;
      if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  it('fails a graph job whose handler kept failing, and takes its graph out of building; a later job completes', async () => {
    brokenReads = true;
    const created = await call('POST', '/memory/departments/create', { name: 'Dead letters' });
    expect(created.status).toBe(200);
    const graphId = created.json.graph_id as string;
    const upload = async () => {
      const form = new FormData();
      form.append('file', new Blob(['Name,Company\nAda Lovelace,Initech\n']), 'people.csv');
      form.append('list_id', graphId);
      const r = await call('POST', '/memory/upload', form);
      expect(r.status).toBe(200);
      return r.json.jobId as string;
    };
    const job = await upload();
    const failed = await until('the job', async () => (await call('GET', `/memory/jobs/${job}`)).json, (j) => j.status === 'completed' || j.status === 'failed');
    expect(failed).toMatchObject({ status: 'failed', message: 'the job could not be processed (an internal error; it was set aside for the operators)' });
    expect(JSON.stringify(failed)).not.toContain('storage refused');
    expect((await call('GET', `/memory/departments/${graphId}`)).json).toMatchObject({ status: 'error' });
    expect(dead.filter((m) => m.headers['lore-dead-topic'] === TOPICS.graphJobs)).toHaveLength(1);

    brokenReads = false;
    const next = await upload();
    expect(await until('the next job', async () => (await call('GET', `/memory/jobs/${next}`)).json, (j) => j.status === 'completed' || j.status === 'failed')).toMatchObject({ status: 'completed' });
    expect((await call('GET', `/memory/departments/${graphId}`)).json).toMatchObject({ status: 'ready' });
  }, 60_000);

  it('fails an upload whose handler kept failing instead of leaving it extracting', async () => {
    brokenReads = true;
    const form = new FormData();
    form.append('file', new Blob(['The Heron depot stores spare turbine blades.'], { type: 'text/plain' }), 'notes.txt');
    const r = await call('POST', '/api/v1/memory/uploads', form);
    expect(r.status).toBe(202);
    const id = r.json.upload_id as string;
    const settled = await until('the upload', async () => (await call('GET', `/api/v1/memory/uploads/${id}`)).json, (u) => u.status === 'completed' || u.status === 'failed');
    expect(settled).toMatchObject({ status: 'failed', error: 'the file could not be processed (an internal error; it was set aside for the operators)' });
    expect(dead.filter((m) => m.headers['lore-dead-topic'] === TOPICS.memoryUploads)).toHaveLength(1);
  }, 60_000);
});
