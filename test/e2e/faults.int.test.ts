import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { requireEnv } from '../support/infra';
import { http as call } from '../support/http';
import { asSuperuser, migrate, prepareInstall, REPO_ROOT as ROOT, runProcess, type Install } from '../support/install';
import { CLUSTER_ENTRY, clusterEnv, clusterPorts, clusterSecrets, opsUrl, type ClusterProcess } from './cluster';
import { readyz, removeKafkaInstall, removeRedisKeys, startProcess, startReceiver, stopProcess, until, type Receiver, type Started } from './processes';

/**
 * Faults (docs/faults.md): the cluster-mode processes each on their own — gateway, webhooks worker, graph API and
 * graph worker, compiled entry points — while the real PostgreSQL, Redis and Kafka they use are stopped and started
 * again under them. After each fault: every document the API accepted is indexed exactly once, every webhook event
 * reaches the receiver under one id, a request answered with an error left nothing behind, and every process is
 * back to ready on its own (the same process ids: nobody restarted anything by hand).
 */
jest.setTimeout(600_000);

const sh = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const run = randomBytes(4).toString('hex');
const SECRETS = clusterSecrets();
/** configuration.md's processes this suite runs: the memory data plane, webhooks and the workflows. */
const PROCESSES: ClusterProcess[] = ['graph', 'graph-worker', 'agents', 'agents-worker', 'webhooks', 'gateway'];
const KAFKA_PREFIX = `faults-${run}`;
const REDIS_PREFIX = `lore:gw:faults-${run}:`;
const TENANT_ID = `faults-${run}`;

/** Runs one of the test infrastructure's commands (test/infra/up.sh and down.sh, through the env file's variables). */
async function infra(command: string, ...args: string[]): Promise<void> {
  await sh('bash', ['-c', `${command} ${args.join(' ')}`], { timeout: 180_000 });
}

/** One ingest's outcome: accepted (with the document id) or refused (with the status and error code). */
interface Attempt {
  marker: string;
  status: number;
  docId?: string;
  code?: string;
  retryAfter?: string;
}

describe('faults: PostgreSQL, Redis and Kafka stopped and started under the cluster-mode processes', () => {
  let install: Install;
  let receiver: Receiver;
  let gatewayUrl: string;
  let key: string;
  /** The tenant's administrator, as the admin CLI made it: sign-in is throttled in Redis too. */
  let admin: { email: string; password: string };
  const procs: Record<string, Started> = {};
  const ops: Record<string, string> = {};
  const pids: Record<string, number> = {};
  const attempts: Attempt[] = [];
  /** Workflows started here: their progress streams (`workflow:<thread>`) are removed from the shared Redis. */
  const threads: string[] = [];

  beforeAll(async () => {
    install = await prepareInstall('faults');
    const m = await migrate(install);
    if (m.code !== 0) throw new Error(`migrations failed:\n${m.output}`);
    const ports = await clusterPorts();
    gatewayUrl = `http://127.0.0.1:${ports.gatewayPublic}`;
    const env = clusterEnv({ databaseUrl: install.appUrl, secrets: SECRETS, kafkaPrefix: KAFKA_PREFIX, redisPrefix: REDIS_PREFIX, ports, processes: PROCESSES });
    for (const name of PROCESSES) ops[name] = opsUrl(ports, name);
    for (const name of PROCESSES) {
      procs[name] = startProcess(process.execPath, [CLUSTER_ENTRY[name]], { cwd: ROOT, env: env[name]! });
      pids[name] = procs[name].child.pid!;
    }
    await allReady(120_000);

    const cli = await runProcess('services/gateway/dist/cli.js', { LORE_ADMIN_URL: `http://127.0.0.1:${ports.gatewayAdmin}`, LORE_ADMIN_TOKEN: SECRETS.adminToken }, {
      args: ['create-tenant', '--name', 'Faults', '--tenant-id', TENANT_ID, '--admin-email', `ops@${TENANT_ID}.example`],
    });
    if (cli.code !== 0) throw new Error(`create-tenant failed:\n${cli.output}`);
    const created = JSON.parse(cli.stdout) as { api_key: string; admin: { email: string; password: string } };
    key = created.api_key;
    admin = created.admin;
    receiver = await startReceiver();
    const hook = await call(gatewayUrl, 'POST', '/api/v1/webhooks', { headers: { 'x-api-key': key }, body: { url: receiver.url, events: ['memory.ingest.completed'] } });
    if (hook.status !== 201) throw new Error(`webhook subscription: ${hook.status} ${hook.text}`);
  });

  afterAll(async () => {
    const failures: unknown[] = [];
    const step = async (fn: () => Promise<unknown>) => fn().catch((err: unknown) => failures.push(err));
    // Whatever a test did, the suites after this one find every service running.
    await step(() => infra(requireEnv('LORE_INFRA_UP'), 'pg', 'redis', 'kafka'));
    await Promise.all(Object.values(procs).map((p) => step(() => stopProcess(p))));
    if (receiver) await step(() => receiver.close());
    await step(() => removeKafkaInstall(KAFKA_PREFIX, `faults-cleanup-${run}`));
    await step(() => removeRedisKeys(REDIS_PREFIX));
    await step(() => removeRedisKeys(threads.map((thread) => `workflow:${thread}`)));
    if (install) await step(() => install.drop());
    if (failures.length > 0) throw failures[0];
  });

  /** Every process answers /readyz with 200, and is the process this suite started. */
  async function allReady(timeoutMs: number): Promise<void> {
    await Promise.all(
      Object.keys(procs).map((name) => until(`${name} /readyz`, async () => ((await readyz(ops[name]!)).status === 200 ? true : undefined), timeoutMs, procs[name])),
    );
    for (const [name, p] of Object.entries(procs)) expect({ name, pid: p.child.pid, alive: p.alive() }).toEqual({ name, pid: pids[name], alive: true });
  }

  /** One ingest through the gateway; whatever the answer, it is recorded with its marker. */
  async function ingestOnce(label: string): Promise<Attempt> {
    const marker = `fault${label}x${randomBytes(4).toString('hex')}`;
    const attempt: Attempt = await call(gatewayUrl, 'POST', '/api/v1/memory/ingest', {
      headers: { 'x-api-key': key },
      body: { content: `Record ${marker} was written while the platform was under test.`, content_type: 'text', routing: { mode: 'auto' } },
    }).then(
      (r) => ({ marker, status: r.status, ...(r.status === 200 ? { docId: r.json.doc_id as string } : { code: r.json?.error?.code ?? r.json?.code ?? r.text.slice(0, 120) }), ...(r.headers['retry-after'] ? { retryAfter: String(r.headers['retry-after']) } : {}) }),
      (err: Error) => ({ marker, status: 0, code: err.message }),
    );
    attempts.push(attempt);
    return attempt;
  }

  /** Ingests one after another until `stop` resolves, then `after` more. */
  async function ingestThrough(label: string, fault: Promise<void>, after = 3): Promise<Attempt[]> {
    const mine: Attempt[] = [];
    let done = false;
    const faultDone = fault.finally(() => {
      done = true;
    });
    for (let i = 0; !done; i++) {
      mine.push(await ingestOnce(`${label}${i}`));
      await sleep(200);
    }
    await faultDone;
    for (let i = 0; i < after; i++) mine.push(await ingestOnce(`${label}after${i}`));
    return mine;
  }

  /**
   * Every accepted document indexed, exactly once (one document row and one chunk of its text each); every refused
   * ingest left nothing; each accepted document's event delivered under a single event id.
   */
  async function expectNothingLostOrTwice(mine: Attempt[]): Promise<void> {
    const accepted = mine.filter((a) => a.status === 200);
    expect(accepted.length).toBeGreaterThan(0);
    for (const a of accepted) {
      await until(`document ${a.docId} indexed`, async () => {
        const d = await call(gatewayUrl, 'GET', `/api/v1/memory/documents/${a.docId}`, { headers: { 'x-api-key': key } });
        if (d.json?.status === 'failed') throw new Error(`document ${a.docId} failed: ${d.text}`);
        return d.status === 200 && d.json.status === 'indexed' ? true : undefined;
      }, 120_000, procs['graph-worker']);
    }
    const rows = await asSuperuser(install.name, async (c) =>
      (
        await c.query<{ marker: string; documents: number; chunks: number }>(
          `SELECT m.marker, (SELECT count(*)::int FROM graph.documents d WHERE d.content LIKE '%' || m.marker || '%') AS documents,
                  (SELECT count(*)::int FROM graph.chunks c WHERE c.content LIKE '%' || m.marker || '%') AS chunks
             FROM unnest($1::text[]) AS m(marker)`,
          [mine.map((a) => a.marker)],
        )
      ).rows,
    );
    const expected = mine.map((a) => ({ marker: a.marker, documents: a.status === 200 ? 1 : 0, chunks: a.status === 200 ? 1 : 0 }));
    expect(rows.sort((x, y) => x.marker.localeCompare(y.marker))).toEqual(expected.sort((x, y) => x.marker.localeCompare(y.marker)));

    const byDoc = await until('a webhook delivery for every accepted document', async () => {
      const ids = new Map<string, Set<string>>();
      for (const d of receiver.received) {
        const body = JSON.parse(d.body.toString('utf8')) as { event_id: string; payload?: { doc_id?: string } };
        const doc = body.payload?.doc_id;
        if (!doc) continue;
        ids.set(doc, (ids.get(doc) ?? new Set()).add(body.event_id));
      }
      return accepted.every((a) => ids.has(a.docId!)) ? ids : undefined;
    }, 120_000, procs.webhooks);
    for (const a of accepted) expect({ doc: a.docId, eventIds: byDoc.get(a.docId!)!.size }).toEqual({ doc: a.docId, eventIds: 1 });
  }

  it('Kafka restarted mid-ingest and mid-delivery: every ingest accepted, indexed once, delivered once, every process ready again', async () => {
    const before = await ingestOnce('kbefore');
    expect(before.status).toBe(200);
    const mine = [before, ...(await ingestThrough('kafka', sleep(500).then(() => infra(requireEnv('LORE_TEST_KAFKA_RESTART')))))];
    // Ingest writes PostgreSQL and the outbox; the broker's absence delays indexing and delivery, never acceptance.
    expect(mine.filter((a) => a.status !== 200)).toEqual([]);
    await expectNothingLostOrTwice(mine);
    await allReady(120_000);
  });

  it('Kafka restarted while company searches start and run: each runs to completed once, with the rows of the tenant\'s knowledge', async () => {
    const headers = { authorization: `Bearer ${key}` };
    // The tenant's knowledge: two Berlin fintech profiles and a Munich one, indexed before the fault.
    const profiles: Record<string, string> = {};
    for (const [name, city] of [['Larkspur Pay', 'Berlin'], ['Tern Ledger', 'Berlin'], ['Wren Capital', 'Munich']] as const) {
      const content = [`# ${name}`, `Company: ${name}`, `Website: https://${name.toLowerCase().replace(' ', '')}.example/`, 'Industry: Fintech', `Headquarters: ${city}, Germany`, `${name} is a fintech company from ${city}.`].join('\n');
      const r = await call(gatewayUrl, 'POST', '/api/v1/memory/ingest', { headers: { 'x-api-key': key }, body: { content, content_type: 'markdown', title: name, routing: { mode: 'auto' } } });
      expect(r.status).toBe(200);
      profiles[name] = r.json.doc_id;
    }
    for (const docId of Object.values(profiles)) {
      await until(`profile ${docId} indexed`, async () => {
        const d = await call(gatewayUrl, 'GET', `/api/v1/memory/documents/${docId}`, { headers: { 'x-api-key': key } });
        return d.status === 200 && d.json.status === 'indexed' ? true : undefined;
      }, 60_000, procs['graph-worker']);
    }

    // One search just before the broker goes, the others while it is away and coming back.
    const restart = sleep(300).then(() => infra(requireEnv('LORE_TEST_KAFKA_RESTART')));
    const started: string[] = [];
    let restarted = false;
    void restart.finally(() => (restarted = true)).catch(() => undefined);
    for (let i = 0; i < 4 && !(restarted && i >= 2); i++) {
      const start = await call(gatewayUrl, 'POST', '/company-search/start', { headers, body: { prompt: 'Find fintech companies in Berlin', list_name: `Berlin fintech ${i}` } });
      expect({ status: start.status, body: start.status === 200 ? '' : start.text }).toEqual({ status: 200, body: '' });
      started.push(start.json.thread_id);
      threads.push(start.json.thread_id);
      await sleep(1_500);
    }
    await restart;
    expect(started.length).toBeGreaterThanOrEqual(2);

    for (const [i, thread] of started.entries()) {
      const snapshot = await until(`company search ${thread} to end`, async () => {
        const r = await call(gatewayUrl, 'GET', `/company-search/status/${thread}`, { headers });
        return ['completed', 'stopped', 'error'].includes(r.json?.status) ? r.json : undefined;
      }, 180_000, procs['agents-worker']);
      expect({ thread, status: snapshot.status, error: snapshot.error_message }).toEqual({ thread, status: 'completed', error: '' });
      // Exactly the Berlin fintech companies of the knowledge, each once (a step run twice would list a row twice).
      const rows = snapshot.table_structure.rows as Array<{ cells: Record<string, { value: string }> }>;
      expect({ list: i, names: rows.map((r) => r.cells.name?.value).sort() }).toEqual({ list: i, names: ['Larkspur Pay', 'Tern Ledger'] });
    }
    // One list per search, none twice.
    const lists = await call(gatewayUrl, 'GET', '/company-search/getLists', { headers });
    expect(lists.status).toBe(200);
    const names = (lists.json.data as Array<{ listName: string; noOfRecords: number }>).filter((l) => l.listName.startsWith('Berlin fintech '));
    expect(names.map((l) => ({ name: l.listName, rows: l.noOfRecords })).sort((x, y) => x.name.localeCompare(y.name))).toEqual(
      started.map((_, i) => ({ name: `Berlin fintech ${i}`, rows: 2 })),
    );
    await allReady(120_000);
  });

  it('PostgreSQL stopped for a few seconds: ingests meanwhile are refused with 503 and leave nothing, accepted ones are indexed once, every process ready again', async () => {
    const outage = (async () => {
      await infra(requireEnv('LORE_INFRA_DOWN'), 'pg');
      await sleep(4_000);
      await infra(requireEnv('LORE_INFRA_UP'), 'pg');
    })();
    const mine = await ingestThrough('pg', outage, 3);
    const refused = mine.filter((a) => a.status !== 200);
    // Refusals are the documented answer to a dependency that is down: 503 with Retry-After, never a 500 or a dropped
    // connection.
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect({ status: r.status, retryAfter: r.retryAfter !== undefined }).toEqual({ status: 503, retryAfter: true });
    await allReady(120_000);
    // After the outage every ingest is accepted again.
    expect(mine.slice(-3).map((a) => a.status)).toEqual([200, 200, 200]);
    await expectNothingLostOrTwice(mine);
  });

  it('Redis stopped for a few seconds: the gateway fails closed (503 UNAVAILABLE, Retry-After) for keys and sign-in alike, and recovers on its own', async () => {
    const signIn = () => call(gatewayUrl, 'POST', '/api/auth/login', { body: { email: admin.email, password: admin.password } });
    expect((await signIn()).status).toBe(200);
    let signInDuringOutage: { status: number; code?: string; retryAfter?: string } | undefined;
    const outage = (async () => {
      await infra(requireEnv('LORE_INFRA_DOWN'), 'redis');
      await sleep(1_000);
      const r = await signIn();
      signInDuringOutage = { status: r.status, code: r.json?.error?.code, retryAfter: r.headers['retry-after'] as string | undefined };
      await sleep(3_000);
      await infra(requireEnv('LORE_INFRA_UP'), 'redis');
    })();
    const mine = await ingestThrough('redis', outage, 3);
    const refused = mine.filter((a) => a.status !== 200);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect({ status: r.status, code: r.code, retryAfter: r.retryAfter }).toEqual({ status: 503, code: 'UNAVAILABLE', retryAfter: '1' });
    expect(mine.slice(-3).map((a) => a.status)).toEqual([200, 200, 200]);
    // Sign-in's throttling lives in Redis as well: refused the same way, and back once Redis is.
    expect(signInDuringOutage).toEqual({ status: 503, code: 'UNAVAILABLE', retryAfter: '1' });
    expect((await signIn()).status).toBe(200);
    await expectNothingLostOrTwice(mine);
    await allReady(60_000);
  });
});
