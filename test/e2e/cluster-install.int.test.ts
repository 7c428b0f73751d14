import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderPng } from '../memory/files';
import { connectMcp, rawInitialize, SEARCH_TOOLS } from '../mcp/client';
import { requireEnv } from '../support/infra';
import { LoopbackWeb } from '../support/loopback-web';
import { http } from '../support/http';
import { asSuperuser, migrate, prepareInstall, REPO_ROOT as ROOT, runProcess, type Install } from '../support/install';
import { installCrds, kubectl, kubectlOk } from '../../operator/test/support/kube';
import { CLUSTER_ENTRY, clusterEnv, clusterPorts, clusterSecrets, opsUrl, type ClusterProcess } from './cluster';
import { distinctFreePorts, noise, readyz, removeKafkaInstall, removeRedisKeys, startProcess, startReceiver, stopProcess, until, type Receiver, type Started } from './processes';

/**
 * Cluster mode installed exactly as docs/ say, every process on its own, then one end-to-end flow through the
 * gateway. The database and its roles are install.md's "Step by step" SQL (an owner that is no superuser, an
 * application role of another name than lore_app, REVOKE ALL FROM PUBLIC, GRANT CONNECT; nobody creates pgvector);
 * the migrations are the chart's script run by hand; each process is its compiled entry point started with only
 * the variables configuration.md lists for it; the tenant comes from the admin CLI, memories and keys from the
 * operator running outside a cluster (operator.md), and a memory's hostname is reached with a Host header
 * (install.md, "Reaching memory hostnames without DNS").
 */
jest.setTimeout(300_000);

const run = randomBytes(4).toString('hex');
/** Per-run secrets, as configuration.md's "Secrets" says to make them. */
const SECRETS = clusterSecrets();
const KAFKA_PREFIX = `ci-${run}`;
const BASE_DOMAIN = 'memory.lore.test';
const SELECTOR_VALUE = `cluster-install-${run}`;
const TENANT_ID = `acme-${run}`;
/** The test Redis is shared with other suites: configuration.md's GATEWAY_REDIS_PREFIX keeps this install apart. */
const REDIS_PREFIX = `lore:gw:ci-${run}:`;

/**
 * The variables the chart's mcp Deployment sets of its own (charts/lore/templates/mcp.yaml), read from the template so
 * this suite follows it; the shared ones (NODE_ENV, LOG_LEVEL, LORE_LOG_LEVEL, OTEL_SERVICE_NAME) come from
 * `lore.commonEnv` and the deployment helper.
 */
const CHART_MCP_ENV = [...readFileSync(join(ROOT, 'charts', 'lore', 'templates', 'mcp.yaml'), 'utf8').matchAll(/\(dict "name" "([A-Z0-9_]+)"/g)].map((m) => m[1]!);

/** A plain HTTP call (unlike fetch it may set Host, as install.md's curl does). */
const call = http;

describe('cluster mode installed as docs/ say, every process on its own', () => {
  let install: Install;
  const procs: Record<string, Started> = {};
  let receiver: Receiver | undefined;
  let web: LoopbackWeb | undefined;
  /** Namespaces given to the tenant; the operator's own (`systemNs`) stands in for the release namespace. */
  const userNamespaces: string[] = [];
  let systemNs: string | undefined;
  let gatewayUrl: string;
  let adminUrl: string;
  let mcpLogDir: string | undefined;
  /** The environment the tool server was started with (the chart's, see `env.mcp`). */
  let mcpEnv: Record<string, string>;
  const ops: Record<string, string> = {};

  beforeAll(async () => {
    // install.md, "Step by step": the SQL as written (the owner is no superuser), then the chart's migrations script.
    install = await prepareInstall('cluster', 'NOSUPERUSER');
    const m = await migrate(install);
    if (m.code !== 0) throw new Error(`migrations failed:\n${m.output}`);

    const ports = await clusterPorts();
    const [operatorPort] = await distinctFreePorts(1, Object.values(ports));
    gatewayUrl = `http://127.0.0.1:${ports.gatewayPublic}`;
    adminUrl = `http://127.0.0.1:${ports.gatewayAdmin}`;
    for (const name of Object.keys(CLUSTER_ENTRY) as ClusterProcess[]) ops[name] = opsUrl(ports, name);
    ops.operator = `http://127.0.0.1:${operatorPort}`;
    // LOG_DIR (the chart's mcp.extraEnv would set it): a folder that does not exist yet, which the process makes.
    mcpLogDir = join(mkdtempSync(join(tmpdir(), `lore-mcp-${run}-`)), 'logs');
    // configuration.md, one table per process (test/e2e/cluster.ts): nothing else reaches them (no inherited
    // environment). Graph embeds with configuration.md's LORE_EMBEDDER=hashed: no model to load; with search
    // lexical-only (below) no answer depends on it. Core and agents get no LORE_AI_LLM_*: the embedded extractive
    // model answers, as graph's does. Core's and its worker's loopback reads are allowed only because the site the web
    // connector below indexes is on loopback (refused with NODE_ENV=production). agents-worker has no SearXNG: lists
    // come from the tenant's directory and knowledge, and the snapshot says no web search provider was configured.
    const env = clusterEnv({ databaseUrl: install.appUrl, secrets: SECRETS, kafkaPrefix: KAFKA_PREFIX, redisPrefix: REDIS_PREFIX, ports, processes: Object.keys(CLUSTER_ENTRY) as ClusterProcess[] });
    // The chart's mcp Deployment, variable for variable (CHART_MCP_ENV, checked below): the tools call the API back
    // through the gateway's address with the caller's key; the identity secret verifies the gateway's signature.
    // MCP_HOST is loopback as for every process here (the chart's 0.0.0.0 is the pod's own network), MCP_PORT a free
    // port instead of the chart's 8000 (spec 3's default, tested on its own below); LOG_DIR added.
    env.mcp = {
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      LORE_LOG_LEVEL: 'info',
      OTEL_SERVICE_NAME: 'mcp',
      ...env.mcp,
      LORE_MCP_BODY_LIMIT_BYTES: '1048576',
      LORE_MCP_MAX_SESSIONS_PER_KEY: '16',
      LORE_MCP_SESSION_IDLE_MS: '900000',
      LORE_MCP_EVENT_STORE_MAX: '10000',
      LOG_DIR: mcpLogDir,
    };
    env.gateway = { ...env.gateway, GATEWAY_MEMORY_BASE_DOMAIN: BASE_DOMAIN };
    mcpEnv = env.mcp;
    for (const name of Object.keys(env) as ClusterProcess[]) procs[name] = startProcess(process.execPath, [CLUSTER_ENTRY[name]], { cwd: ROOT, env: env[name]! });
    await Promise.all(Object.keys(env).map((name) => until(`${name} /readyz`, async () => ((await readyz(ops[name]!)).status === 200 ? true : undefined), 120_000, procs[name])));

    // operator.md, "Running it outside a cluster": its own namespace stands in for the release namespace.
    await installCrds();
    systemNs = `lore-ci-${run}`;
    await kubectlOk(['create', 'namespace', systemNs]);
    procs.operator = startProcess(process.execPath, ['operator/dist/main.js'], {
      cwd: ROOT,
      env: {
        KUBECONFIG: requireEnv('KUBECONFIG'),
        LORE_OPERATOR_ADMIN_URL: adminUrl,
        LORE_OPERATOR_ADMIN_TOKEN: SECRETS.adminToken,
        LORE_OPERATOR_BASE_DOMAIN: BASE_DOMAIN,
        LORE_OPERATOR_GATEWAY_SERVICE: 'lore-gateway',
        LORE_OPERATOR_GATEWAY_NAMESPACE: systemNs,
        LORE_OPERATOR_LEASE_NAMESPACE: systemNs,
        LORE_OPERATOR_NAMESPACE_SELECTOR: `lore.dev/operator=${SELECTOR_VALUE}`,
        LORE_OPERATOR_HEALTH_HOST: '127.0.0.1',
        LORE_OPERATOR_HEALTH_PORT: String(operatorPort),
        POD_NAME: `ci-operator-${run}`,
      },
    });
    await until('operator /readyz', async () => ((await readyz(ops.operator!)).status === 200 ? true : undefined), 60_000, procs.operator);
  });

  afterAll(async () => {
    // Every step runs whatever failed before it; the first failure is reported at the end.
    const failures: unknown[] = [];
    const step = async (fn: () => Promise<unknown>) => fn().catch((err: unknown) => failures.push(err));
    // The operator still runs here, so its finalizers revoke and remove what the objects made before they go.
    if (procs.operator?.alive()) {
      for (const ns of userNamespaces) await step(() => kubectlOk(['-n', ns, 'delete', 'memories,apikeys', '--all', '--wait=true', '--timeout=60s']));
    }
    await Promise.all(Object.values(procs).map((p) => step(() => stopProcess(p))));
    if (receiver) await step(() => receiver!.close());
    if (web) await step(() => web!.close());
    for (const ns of [...userNamespaces, ...(systemNs ? [systemNs] : [])]) await step(() => removeNamespace(ns));
    await step(() => removeKafkaInstall(KAFKA_PREFIX, `cluster-install-cleanup-${run}`));
    await step(() => removeRedisKeys(REDIS_PREFIX));
    await step(() => removeRedisKeys(agentThreads.map((thread) => `workflow:${thread}`)));
    if (install) await step(() => install.drop());
    if (mcpLogDir) rmSync(join(mcpLogDir, '..'), { recursive: true, force: true });
    if (failures.length > 0) throw failures[0];
  });

  /** Company searches started here: their progress streams (`workflow:<thread>`) are removed from the shared Redis. */
  const agentThreads: string[] = [];
  let tenant: { tenant_id: string; workspace_id: string; key_id: string; api_key: string; admin: { email: string; password: string } };
  let key: string;
  let firstDoc: string;

  it('migrates as the owner, grants the role LORE_DATABASE_URL names, and every /readyz says what is true', async () => {
    // The migrations granted the application role of the URL, whatever its name; pgvector was not created, since
    // the owner of install.md's SQL may not (pgvector is no trusted extension) and nobody else did.
    const granted = await asSuperuser(install.name, (c) =>
      c.query<{ schema: string; usage: boolean }>(`SELECT s AS schema, has_schema_privilege($1, s, 'USAGE') AS usage FROM unnest(ARRAY['runtime', 'gateway', 'graph', 'core', 'agents']) s ORDER BY 1`, [install.app]),
    );
    expect(granted.rows).toEqual([
      { schema: 'agents', usage: true },
      { schema: 'core', usage: true },
      { schema: 'gateway', usage: true },
      { schema: 'graph', usage: true },
      { schema: 'runtime', usage: true },
    ]);
    const vector = await asSuperuser(install.name, (c) => c.query(`SELECT 1 FROM pg_extension WHERE extname = 'vector'`));
    expect(vector.rowCount).toBe(0);

    // The gateway started beside the graph and core and may have asked them before they were ready: it reports such
    // an upstream (degraded, never unready) until its next probe, at most 5 s later, finds it ready (docs/gateway.md).
    const gateway = await until('the gateway to see its graph, core, agents and mcp upstreams ready', async () => {
      const r = await readyz(ops.gateway!);
      return r.body?.checks?.upstreams?.degraded === false ? r : undefined;
    }, 30_000, procs.gateway);
    expect(gateway.status).toBe(200);
    expect(gateway.body).toMatchObject({
      status: 'ready',
      checks: {
        database: { ok: true, role: install.app },
        state: { ok: true, kind: 'redis' },
        upstreams: {
          ok: true,
          degraded: false,
          graph: { reachable: true, status: 200 },
          core: { reachable: true, status: 200 },
          agents: { reachable: true, status: 200 },
          mcp: { reachable: true, status: 200 },
        },
      },
    });
    // core: its role checked against the runtime and core schemas (which it did not migrate itself).
    const core = await readyz(ops.core!);
    expect(core.status).toBe(200);
    expect(core.body).toMatchObject({ status: 'ready', checks: { core: { ok: true } } });
    // core-worker: the same role check, and membership of its consumer group (lore.connectors.index).
    const coreWorker = await readyz(ops['core-worker']!);
    expect(coreWorker.status).toBe(200);
    expect(coreWorker.body).toMatchObject({ status: 'ready', checks: { core: { ok: true } } });
    expect(inGroups(coreWorker.body)).toEqual(['core-worker']);
    // agents: its role checked against the runtime and agents schemas (the migrations script applied them).
    const agents = await readyz(ops.agents!);
    expect(agents.status).toBe(200);
    expect(agents.body).toMatchObject({ status: 'ready', checks: { agents: { ok: true } } });
    // agents-worker: the same role check, and membership of its consumer groups (lore.agents.workflows, and the
    // gateway's credit balances on lore.credits.balance).
    const agentsWorker = await until('agents-worker to join its consumer group', async () => {
      const r = await readyz(ops['agents-worker']!);
      return r.status === 200 && inGroups(r.body).length > 0 ? r : undefined;
    }, 60_000, procs['agents-worker']);
    expect(agentsWorker.body).toMatchObject({ status: 'ready', checks: { agents: { ok: true } } });
    expect(inGroups(agentsWorker.body)).toEqual(['agents-worker', 'agents-worker-credits']);
    // Search is lexical-only, and both graph processes say so rather than claiming vectors.
    const graphCheck = { ok: true, vectors: false, retrieval: 'lexical', embedder: expect.objectContaining({ kind: 'hashed' }) };
    const graph = await readyz(ops.graph!);
    expect(graph.status).toBe(200);
    expect(graph.body.checks.graph).toEqual(expect.objectContaining({ ...graphCheck, ocr: 'disabled' }));
    const worker = await readyz(ops['graph-worker']!);
    expect(worker.status).toBe(200);
    expect(worker.body.checks.graph).toEqual(expect.objectContaining({ ...graphCheck, ocr: 'tesseract.js' }));
    expect(inGroups(worker.body)).toEqual(GRAPH_WORKER_GROUPS);
    // The webhooks worker: its role, its broker, and membership of the fan-out, delivery and every retry group, and of
    // the gateway's credits consumer (lore.credits.usage).
    const webhooks = await readyz(ops.webhooks!);
    expect(webhooks.status).toBe(200);
    expect(webhooks.body.checks).toMatchObject({ database: { ok: true, role: install.app }, 'event bus': { ok: true, kind: 'kafka' }, worker: { ok: true }, credits: { ok: true } });
    expect(inGroups(webhooks.body)).toEqual(
      [...['fanout', 'deliveries', 'retry.1s', 'retry.2s', 'retry.4s', 'retry.8s', 'retry.30s'].map((g) => `lore.webhooks.${g}`), 'gateway-credits'].sort(),
    );
    // The operator: its caches synced, and it leads (it holds the Lease in its namespace).
    const operator = await readyz(ops.operator!);
    expect(operator.status).toBe(200);
    expect(operator.body).toMatchObject({ status: 'ready', checks: { caches: { ok: true, leader: true } } });
  });

  it('creates a tenant with the admin CLI through the admin API, and a second key through the portal', async () => {
    // install.md, "The admin CLI in the image", from a built checkout: LORE_ADMIN_URL and LORE_ADMIN_TOKEN only.
    const cli = await runProcess('services/gateway/dist/cli.js', { LORE_ADMIN_URL: adminUrl, LORE_ADMIN_TOKEN: SECRETS.adminToken }, {
      args: ['create-tenant', '--name', 'Acme', '--tenant-id', TENANT_ID, '--admin-email', `ops@${TENANT_ID}.example`],
    });
    expect({ code: cli.code, output: cli.code === 0 ? '' : cli.output }).toEqual({ code: 0, output: '' });
    tenant = JSON.parse(cli.stdout);
    expect(tenant).toMatchObject({ tenant_id: TENANT_ID, tenant_created: true, workspace_id: expect.any(String), api_key: expect.stringMatching(/^ck_live_/), admin: { email: `ops@${TENANT_ID}.example`, password: expect.any(String) } });

    const first = await call(gatewayUrl, 'GET', '/api/v1/workspaces', { headers: { 'x-api-key': tenant.api_key } });
    expect(first.status).toBe(200);
    expect(first.json.default_workspace_id).toBe(tenant.workspace_id);

    // The tenant's administrator signs in and makes a key on the portal route (docs/gateway.md).
    const login = await call(gatewayUrl, 'POST', '/api/auth/login', { body: { email: tenant.admin.email, password: tenant.admin.password } });
    expect(login.status).toBe(200);
    const created = await call(gatewayUrl, 'POST', '/api/v1/api-keys', { headers: { authorization: `Bearer ${login.json.token}` }, body: { type: 'live', name: 'ci pipeline' } });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: 'ci pipeline', type: 'live', status: 'active', key: expect.stringMatching(/^ck_live_/) });
    expect(created.json.key).not.toBe(tenant.api_key);
    key = created.json.key;
    const listed = await call(gatewayUrl, 'GET', '/api/v1/api-keys', { headers: { authorization: `Bearer ${login.json.token}` } });
    expect(listed.json.api_keys.map((k: { key_id: string }) => k.key_id).sort()).toEqual([tenant.key_id, created.json.key_id].sort());
    const second = await call(gatewayUrl, 'GET', '/api/v1/workspaces', { headers: { 'x-api-key': key } });
    expect(second.status).toBe(200);
    expect(second.json.default_workspace_id).toBe(tenant.workspace_id);
  });

  it('chats through the gateway: core, on its own process, creates and lists a session for the tenant\'s key', async () => {
    const created = await call(gatewayUrl, 'POST', '/api/chat/create-chat-session', { headers: { 'x-api-key': key }, body: { persona_id: 0 } });
    expect({ status: created.status, body: created.status === 200 ? '' : created.text }).toEqual({ status: 200, body: '' });
    const sessionId: string = created.json.chat_session_id;
    const listed = await call(gatewayUrl, 'GET', '/api/chat/get-user-chat-sessions', { headers: { 'x-api-key': key } });
    expect(listed.status).toBe(200);
    expect(listed.json.sessions).toEqual([expect.objectContaining({ id: sessionId, persona_id: 0, shared_status: 'private' })]);
  });

  it('answers agents\' open routes through the gateway: GET /api/health healthy from the agents process, and its OpenAPI document', async () => {
    // docs/agents.md: open routes, no credential; the gateway forwards them to GATEWAY_UPSTREAM_AGENTS.
    const health = await call(gatewayUrl, 'GET', '/api/health');
    expect(health.status).toBe(200);
    expect(health.json).toEqual({ status: 'healthy', timestamp: expect.any(String), version: '1.0.0', environment: expect.any(String) });
    // The agents process answered it: the same body straight from its port.
    const direct = await call(ops.agents!, 'GET', '/api/health');
    expect(direct.json).toMatchObject({ status: 'healthy', version: health.json.version, environment: health.json.environment });
    const openapi = await call(gatewayUrl, 'GET', '/api/agents/openapi.json');
    expect(openapi.status).toBe(200);
    expect(openapi.json).toMatchObject({ openapi: expect.stringMatching(/^3\.1\./), info: { version: '1.0.0' } });
    expect(Object.keys(openapi.json.paths)).toEqual(expect.arrayContaining(['/api/health', '/', '/api/agents/openapi.json']));
    // The document is the committed one (services/agents/openapi.json) the process serves.
    expect(openapi.json).toEqual(JSON.parse(readFileSync(join(ROOT, 'services', 'agents', 'openapi.json'), 'utf8')));
  });

  it('imports a company CSV on agents, then runs a company search started with a key to completed on agents-worker: the rows the prompt asks for, from the CSV and from the memory, its progress stream in Redis', async () => {
    const headers = { authorization: `Bearer ${key}` };
    // The tenant's knowledge: two company profiles in its memory (one a Berlin fintech), indexed by graph-worker.
    const profiles: Record<string, string> = {};
    for (const [name, city] of [['Brightmark', 'Berlin'], ['Zahlwerk', 'Munich']] as const) {
      const content = [`# ${name}`, `Company: ${name}`, `Website: https://${name.toLowerCase()}.example/`, 'Industry: Fintech', `Headquarters: ${city}, Germany`, 'Employees: 60', `${name} is a fintech company from ${city}.`].join('\n');
      const r = await call(gatewayUrl, 'POST', '/api/v1/memory/ingest', { headers: { 'x-api-key': key }, body: { content, content_type: 'markdown', title: name, routing: { mode: 'auto' } } });
      expect(r.status).toBe(200);
      profiles[name] = r.json.doc_id;
    }
    for (const docId of Object.values(profiles)) {
      await until(`profile ${docId} to be indexed`, async () => {
        const d = await call(gatewayUrl, 'GET', `/api/v1/memory/documents/${docId}`, { headers: { 'x-api-key': key } });
        if (d.json?.status === 'failed') throw new Error(`document ${docId} failed: ${d.text}`);
        return d.status === 200 && d.json.status === 'indexed' ? true : undefined;
      }, 60_000, procs['graph-worker']);
    }
    // docs/agents.md, "CSV import": the upload answers its analysis as a stream of events; the review starts the import,
    // whose rows become the tenant's directory records.
    const form = new FormData();
    form.append('file', new Blob([COMPANIES_CSV], { type: 'text/csv' }), 'prospects.csv');
    const uploaded = await fetch(`${gatewayUrl}/api/lists/csv/upload`, { method: 'POST', headers, body: form });
    expect(uploaded.status).toBe(200);
    const events = (await uploaded.text()).split('\n\n').map((c) => c.trim()).filter((c) => c.startsWith('data: ')).map((c) => JSON.parse(c.slice('data: '.length)));
    expect(events[events.length - 1]).toMatchObject({ status: 'ready_for_review', row_count: 4 });
    const importThread: string = events[0].thread_id;
    const reviewed = await call(gatewayUrl, 'POST', `/api/lists/csv/review/${importThread}`, { headers, body: { listName: 'Prospects' } });
    expect({ status: reviewed.status, body: reviewed.status === 200 ? '' : reviewed.text }).toEqual({ status: 200, body: '' });
    const imported = await until('the CSV import to complete', async () => {
      const r = await call(gatewayUrl, 'GET', `/api/lists/csv/status/${importThread}`, { headers });
      expect(r.status).toBe(200);
      if (r.json.status === 'error') throw new Error(`the import failed: ${r.text}`);
      return r.json.status === 'completed' ? r.json : undefined;
    }, 60_000, procs.agents);
    expect(imported).toMatchObject({ total_rows: 4, imported_rows: 4, errors: [] });

    const start = await call(gatewayUrl, 'POST', '/company-search/start', { headers, body: { prompt: 'Find fintech companies in Berlin', list_name: 'Berlin fintech' } });
    expect({ status: start.status, body: start.status === 200 ? '' : start.text }).toEqual({ status: 200, body: '' });
    expect(start.json).toMatchObject({ success: true, status: 'processing', thread_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const thread: string = start.json.thread_id;
    agentThreads.push(thread);
    // The agents API wrote the workflow and its lore.agents.workflows message through the outbox; agents-worker's relay
    // publishes it and its consumer runs the steps: criteria, then candidates from the directory (no web search is
    // configured, and the snapshot says so) and the tenant's memory (graph's API, as the search's starter), scored
    // against the criteria.
    const snapshot = await until('the company search to end', async () => {
      const r = await call(gatewayUrl, 'GET', `/company-search/status/${thread}`, { headers });
      expect(r.status).toBe(200);
      return ['completed', 'stopped', 'error'].includes(r.json.status) ? r.json : undefined;
    }, 60_000, procs['agents-worker']);
    expect(snapshot).toMatchObject({ success: true, thread_id: thread, status: 'completed', current_step: 'completed', category: 'company_search', title: 'Berlin fintech', error_message: '' });
    expect(snapshot.criteria.map((c: { column_name: string }) => c.column_name)).toEqual(expect.arrayContaining(['industry', 'location']));
    expect(snapshot.table_structure.sources).toEqual(['directory', 'knowledge']);
    expect(snapshot.table_structure.notes.join(' ')).toMatch(/no web search provider/);
    // Exactly the Berlin fintech companies: the file's two (not the Hamburg one, not the Berlin clinic) and the memory's
    // one (not the Munich one), which names its document.
    const rows = snapshot.table_structure.rows as Array<{ cells: Record<string, { value: string }>; metadata: { source?: { source: string; document_id?: string } } }>;
    expect(rows.map((r) => r.cells.name?.value).sort()).toEqual(['Brightmark', 'Kestrel Pay', 'Osprey Ledger']);
    expect(snapshot.table_structure.current_count).toBe(3);
    expect(rows.find((r) => r.cells.name?.value === 'Brightmark')!.metadata.source).toMatchObject({ source: 'knowledge', document_id: profiles.Brightmark });
    // Its progress stream is in Redis (the API's stream routes read what the worker appended), and the list is the tenant's.
    const stream = await call(gatewayUrl, 'GET', `/api/stream/stream-status/workflow:${thread}`, { headers });
    expect(stream.status).toBe(200);
    expect(stream.json).toMatchObject({ stream_key: `workflow:${thread}`, active: false });
    expect(stream.json.length).toBeGreaterThan(1);
    const lists = await call(gatewayUrl, 'GET', '/company-search/getLists', { headers });
    expect(lists.status).toBe(200);
    expect(JSON.stringify(lists.json)).toContain('Berlin fintech');
    // Without a credential the gateway refuses it.
    const anonymous = await call(gatewayUrl, 'GET', `/company-search/status/${thread}`);
    expect(anonymous.status).toBe(401);
  });

  it('ingests and finds a document with a citation, and delivers a signed memory.ingest.completed to a loopback receiver', async () => {
    receiver = await startReceiver();
    const hook = await call(gatewayUrl, 'POST', '/api/v1/webhooks', { headers: { 'x-api-key': key }, body: { url: receiver.url, events: ['memory.ingest.completed'] } });
    expect(hook.status).toBe(201);
    const signingSecret: string = hook.json.secret;
    expect(signingSecret).toMatch(/^whsec_/);

    firstDoc = await ingest(gatewayUrl, key, 'The Kestrel archive of Acme is stored in Reykjavik.');
    const search = await call(gatewayUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': key }, body: { query: 'Where is the Kestrel archive stored?' } });
    expect(search.status).toBe(200);
    expect(search.json).toMatchObject({ retrieval: 'lexical', citations: [{ index: 1, title: expect.any(String), document_id: firstDoc }] });
    expect(search.json.answer).toContain('Reykjavik');

    const delivery = await until(
      'the webhook delivery of the ingest',
      async () => receiver!.received.find((d) => JSON.parse(d.body.toString('utf8')).payload?.doc_id === firstDoc),
      60_000,
      procs.webhooks,
    );
    const envelope = JSON.parse(delivery.body.toString('utf8'));
    expect(envelope).toMatchObject({ event: 'memory.ingest.completed', scope: { tenant_id: TENANT_ID, workspace_id: tenant.workspace_id }, payload: { doc_id: firstDoc } });
    expect(delivery.headers).toMatchObject({ 'x-lore-event': 'memory.ingest.completed', 'webhook-id': envelope.event_id });
    // docs/webhooks.md, "Verifying a delivery": spec 1's HMAC over the raw body with the whole secret, and the
    // Standard Webhooks signature with the decoded key over id.timestamp.body.
    expect(hmacMatches(delivery.headers['x-service-signature'], createHmac('sha256', signingSecret).update(delivery.body).digest('hex'))).toBe(true);
    expect(hmacMatches(delivery.headers['x-service-signature'], createHmac('sha256', 'whsec_another').update(delivery.body).digest('hex'))).toBe(false);
    const signed = `${delivery.headers['webhook-id']}.${delivery.headers['webhook-timestamp']}.${delivery.body.toString('utf8')}`;
    const standard = createHmac('sha256', Buffer.from(signingSecret.slice('whsec_'.length), 'base64')).update(signed).digest('base64');
    expect(String(delivery.headers['webhook-signature']).split(' ')).toContain(`v1,${standard}`);
    expect(Math.abs(Date.now() / 1000 - Number(delivery.headers['webhook-timestamp']))).toBeLessThan(300);
  });

  it('answers a chat message through the gateway from the memory: core retrieves the ingested document from the graph process', async () => {
    const created = await call(gatewayUrl, 'POST', '/api/chat/create-chat-session', { headers: { 'x-api-key': key }, body: { persona_id: 0 } });
    expect(created.status).toBe(200);
    const sent = await call(gatewayUrl, 'POST', '/api/chat/send-chat-message', {
      headers: { 'x-api-key': key },
      body: { chat_session_id: created.json.chat_session_id, message: 'Where is the Kestrel archive stored?', stream: false },
    });
    expect({ status: sent.status, body: sent.status === 200 ? '' : sent.text }).toEqual({ status: 200, body: '' });
    const complete = sent.json as { answer: string; citation_info: Array<{ document_id: string }>; top_documents: Array<{ document_id: string }>; error_msg: string | null };
    expect(complete.error_msg).toBeNull();
    expect(complete.top_documents.length).toBeGreaterThan(0);
    expect(complete.top_documents.map((d) => d.document_id)).toContain(firstDoc);
    expect(complete.citation_info.map((c) => c.document_id)).toContain(firstDoc);
    expect(complete.answer).toContain('Reykjavik');
  });

  it('starts the MCP tool server as the chart does: every variable its Deployment sets, /health open through the gateway and on its port', async () => {
    // The chart's own list (mcp.yaml) is what this suite started the process with, nothing missing.
    expect(CHART_MCP_ENV).toEqual(expect.arrayContaining(['MCP_HOST', 'MCP_PORT', 'AGENT_CORE_URL', 'MEMORY_URL', 'LORE_IDENTITY_SECRET']));
    expect(Object.keys(mcpEnv)).toEqual(expect.arrayContaining(CHART_MCP_ENV));
    // docs/mcp.md, "Endpoints": /health is open, at the gateway (forwarded to GATEWAY_UPSTREAM_MCP) and on the process.
    const viaGateway = await call(gatewayUrl, 'GET', '/health');
    expect({ status: viaGateway.status, body: viaGateway.json }).toEqual({ status: 200, body: { status: 'ok', service: 'mcp' } });
    const direct = await call(ops.mcp!, 'GET', '/health');
    expect({ status: direct.status, body: direct.json }).toEqual({ status: 200, body: { status: 'ok', service: 'mcp' } });
    // /mcp itself needs a key, and the gateway says so before the tool server sees anything.
    const anonymous = await rawInitialize(gatewayUrl, {});
    expect({ status: anonymous.status, body: anonymous.json }).toEqual({ status: 401, body: { success: false, error: 'Missing x-api-key header' } });
  });

  it("calls tools with the SDK's client through the gateway's /mcp: each goes back through the gateway to agents and graph with the caller's key", async () => {
    const mcp = await connectMcp(gatewayUrl, key);
    try {
      // A key of every module (scopes.modules empty) sees every tool.
      const names = (await mcp.client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining([...SEARCH_TOOLS, 'memory_search', 'memory_ingest', 'memory_list_departments', 'enterprise_get_chat_sessions']));
      // agents, through the gateway: the list and the company search run earlier in this suite.
      const lists = await mcp.call('get_lists');
      expect(lists.success).toBe(true);
      expect(JSON.stringify(lists.data)).toContain('Berlin fintech');
      const status = await mcp.call('get_status_workflows', { workflow_id: agentThreads[0]! });
      expect(status).toMatchObject({ success: true, data: { thread_id: agentThreads[0], status: 'completed', title: 'Berlin fintech' } });
      // graph, through the gateway (spec 1's route, the key as x-api-key): the document ingested earlier.
      const found = await mcp.call('memory_search', { query: 'Where is the Kestrel archive stored?' });
      expect(found.success).toBe(true);
      expect(found.data.citations).toEqual(expect.arrayContaining([expect.objectContaining({ document_id: firstDoc })]));
      // core, through the gateway: the chat sessions the key's user opened above.
      const sessions = await mcp.call('enterprise_get_chat_sessions');
      expect(sessions.success).toBe(true);
      expect(sessions.data.sessions.length).toBeGreaterThan(0);
      // The API decides again: an unknown workflow is the agents route's own 404.
      const unknown = await mcp.call('get_status_workflows', { workflow_id: '00000000-0000-4000-8000-000000000000' });
      expect(unknown).toEqual({ success: false, error: 'HTTP 404: workflow not found' });
    } finally {
      await mcp.close();
    }
  });

  it('lets only keys with the mcp module in: a key without it is refused at the gateway, one with mcp and agents sees the agents tools only', async () => {
    const login = await call(gatewayUrl, 'POST', '/api/auth/login', { body: { email: tenant.admin.email, password: tenant.admin.password } });
    expect(login.status).toBe(200);
    const make = async (name: string, modules: string[]) => {
      const r = await call(gatewayUrl, 'POST', '/api/v1/api-keys', { headers: { authorization: `Bearer ${login.json.token}` }, body: { type: 'live', name, scopes: { modules } } });
      expect({ status: r.status, body: r.status === 201 ? '' : r.text }).toEqual({ status: 201, body: '' });
      return r.json.key as string;
    };
    const memoryOnly = await make('memory only', ['memory']);
    const refused = await rawInitialize(gatewayUrl, { 'x-api-key': memoryOnly });
    expect(refused.status).toBe(403);
    const agentsKey = await make('mcp and agents', ['mcp', 'agents']);
    const mcp = await connectMcp(gatewayUrl, agentsKey);
    try {
      const names = (await mcp.client.listTools()).tools.map((t) => t.name).sort();
      expect(names).toEqual([...SEARCH_TOOLS].sort());
      expect(await mcp.call('get_lists')).toMatchObject({ success: true });
      // A tool of a module the key lacks is unknown to its session.
      expect(await mcp.call('memory_search', { query: 'Kestrel' })).toEqual({ success: false, error: 'Tool memory_search not found' });
    } finally {
      await mcp.close();
    }
  });

  it("writes the tool server's log to LOG_DIR (mcp.log, nothing on standard output) and flushes it on SIGTERM, ending with the shutdown", async () => {
    const file = join(mcpLogDir!, 'mcp.log');
    const lines = () => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { msg: string; service: string; url?: string; reason?: string });
    const before = lines();
    expect(before.every((l) => l.service === 'mcp')).toBe(true);
    expect(before.find((l) => l.msg === 'mcp listening')).toMatchObject({ url: ops.mcp });
    const mcp = procs.mcp!;
    expect(mcp.output()).not.toContain('"service":"mcp"');
    await stopProcess(mcp);
    expect({ code: mcp.child.exitCode, signal: mcp.child.signalCode }).toEqual({ code: 0, signal: null });
    const after = lines();
    expect(after.length).toBeGreaterThan(before.length);
    expect(after.find((l) => l.msg === 'shutting down')).toMatchObject({ reason: 'SIGTERM' });
    expect(after[after.length - 1]!.msg).toBe('shutdown complete');
    expect(mcp.output()).not.toContain('"service":"mcp"');
  });

  it("listens on spec 3's defaults when MCP_HOST and MCP_PORT are unset: 127.0.0.1:8000", async () => {
    // Without LOG_DIR the log is on standard output. Port 8000 may be taken on a shared machine: then the process must
    // have failed on exactly that address, which proves the same defaults.
    const p = startProcess(process.execPath, ['services/mcp/dist/main.js'], { cwd: ROOT, env: { AGENT_CORE_URL: gatewayUrl, MEMORY_URL: gatewayUrl, LORE_IDENTITY_SECRET: SECRETS.identity } });
    procs['mcp-defaults'] = p;
    const outcome = await until('the tool server on its default address to listen, or to fail', async () => {
      if (/"msg":"mcp listening"/.test(p.output())) return 'listening';
      return p.alive() ? undefined : 'exited';
    }, 60_000);
    if (outcome === 'exited') {
      expect(p.output()).toMatch(/EADDRINUSE\S* address already in use 127\.0\.0\.1:8000/);
      return;
    }
    const listening = p.output().split('\n').filter((l) => l.includes('"msg":"mcp listening"')).map((l) => JSON.parse(l))[0];
    expect(listening).toMatchObject({ service: 'mcp', url: 'http://127.0.0.1:8000' });
    const health = await call('http://127.0.0.1:8000', 'GET', '/health');
    expect({ status: health.status, body: health.json }).toEqual({ status: 200, body: { status: 'ok', service: 'mcp' } });
    await stopProcess(p);
    expect(p.child.exitCode).toBe(0);
  });

  it('indexes a web connector on core-worker: run once through the gateway, the attempt succeeds, and the memory finds the page with its link', async () => {
    web = await new LoopbackWeb({ seed: 3 }).start();
    // Core's routes take the key as a bearer credential; the memory API as x-api-key.
    const headers = { authorization: `Bearer ${key}` };
    const hub = `${web.url}/`;
    const connector = await call(gatewayUrl, 'POST', '/api/manage/admin/connector', {
      headers,
      body: {
        name: 'Loopback hub', source: 'web', input_type: 'load_state', connector_specific_config: { base_url: hub, web_connector_type: 'single' },
        refresh_freq: 3600, prune_freq: null, indexing_start: null, access_type: 'public', groups: [],
      },
    });
    expect({ status: connector.status, body: connector.status === 200 ? '' : connector.text }).toEqual({ status: 200, body: '' });
    const credential = await call(gatewayUrl, 'POST', '/api/manage/credential', { headers, body: { name: 'web', source: 'web', credential_json: {} } });
    expect(credential.status).toBe(201);
    const pair = await call(gatewayUrl, 'PUT', `/api/manage/connector/${connector.json.id}/credential/${credential.json.id}`, { headers, body: {} });
    expect(pair.status).toBe(200);
    const run = await call(gatewayUrl, 'POST', '/api/manage/admin/connector/run-once', { headers, body: { connector_id: connector.json.id } });
    expect(run.status).toBe(200);
    // The core API wrote the attempt and its lore.connectors.index message through the outbox; core-worker's relay
    // publishes it, its consumer runs the attempt and writes the page into the memory through the graph process.
    const info = await until('the connector\'s index attempt to end', async () => {
      const r = await call(gatewayUrl, 'GET', `/api/manage/admin/cc-pair/${pair.json.id}`, { headers });
      return r.status === 200 && r.json.last_index_attempt_status ? r.json : undefined;
    }, 60_000, procs['core-worker']);
    expect(info).toMatchObject({ last_index_attempt_status: 'success', num_docs_indexed: 1 });
    expect(web.requests.some((r) => r.path === '/')).toBe(true);
    // graph-worker indexes the document as any other; retrieval then returns it with the page's link.
    const chunks = await until('the connector document to be retrievable', async () => {
      const found = await call(gatewayUrl, 'POST', '/api/v1/memory/retrieve', { headers: { 'x-api-key': key }, body: { query: 'The loopback web' } });
      expect(found.status).toBe(200);
      const list = found.json.chunks as Array<Record<string, any>>;
      return list.some((c) => c.link === hub) ? list : undefined;
    }, 60_000, procs['graph-worker']);
    expect(chunks).toContainEqual(expect.objectContaining({ link: hub, source_type: 'web', title: 'The loopback web' }));
  });

  it('fails a corrupt upload with a reason while the graph worker stays ready, and indexes a good one after it', async () => {
    const corrupt = [
      { filename: 'scan.png', type: 'image/png', data: (await renderPng(['Truncated scan'])).subarray(0, 20), reason: /^the OCR engine could not read the file/ },
      { filename: 'report.pdf', type: 'application/pdf', data: Buffer.concat([Buffer.from('%PDF-1.7\n'), noise(8192, 11)]), reason: /^unreadable PDF: / },
    ];
    for (const c of corrupt) {
      const done = await uploadAndSettle(c.filename, c.type, c.data);
      expect({ file: c.filename, status: done.status, doc_id: done.doc_id }).toEqual({ file: c.filename, status: 'failed', doc_id: null });
      expect(done.error).toMatch(c.reason);
      expect(procs['graph-worker']!.alive()).toBe(true);
      const ready = await readyz(ops['graph-worker']!);
      expect({ file: c.filename, status: ready.status, groups: inGroups(ready.body) }).toEqual({ file: c.filename, status: 200, groups: GRAPH_WORKER_GROUPS });
    }
    const good = await uploadAndSettle('harbour.txt', 'text/plain', Buffer.from('The Osprey ferry leaves the northern harbour at seven every morning.'));
    expect(good).toMatchObject({ status: 'completed', extractor: 'text', error: null, doc_id: expect.any(String) });
    const search = await call(gatewayUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': key }, body: { query: 'When does the Osprey ferry leave?' } });
    expect(search.status).toBe(200);
    expect(search.json.citations).toEqual(expect.arrayContaining([expect.objectContaining({ document_id: good.doc_id })]));
  });

  let userNs: string;

  it('provisions a Memory and an ApiKey through the operator; the memory answers on its hostname with its key', async () => {
    // operator.md, "Using it": a namespace given to the tenant (and to this operator, by its selector).
    userNs = `team-a-${run}`;
    await kubectlOk(['create', 'namespace', userNs]);
    userNamespaces.push(userNs);
    await kubectlOk(['label', 'namespace', userNs, `lore.dev/tenant=${TENANT_ID}`, `lore.dev/operator=${SELECTOR_VALUE}`]);
    await kubectlOk(['-n', userNs, 'apply', '-f', '-'], MANIFESTS);
    for (const kind of ['memory/notes', 'apikey/ci']) {
      await until(`${kind} to be Ready`, async () => {
        const r = await kubectl(['-n', userNs, 'get', kind, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']);
        return r.stdout.trim() === 'True' ? true : undefined;
      }, 60_000, procs.operator);
    }

    // install.md, "Reaching memory hostnames without DNS": the hostname and the key as its commands read them.
    const host = (await kubectlOk(['-n', userNs, 'get', 'memory', 'notes', '-o', 'jsonpath={.status.hostname}'])).trim();
    expect(host).toBe(`notes-${userNs}.${BASE_DOMAIN}`);
    const memoryKey = Buffer.from(await kubectlOk(['-n', userNs, 'get', 'secret', 'notes-memory-key', '-o', 'jsonpath={.data.api-key}']), 'base64').toString('utf8');
    expect(memoryKey).toMatch(/^mk_/);

    const doc = await ingest(gatewayUrl, memoryKey, 'The fog horn at Kestrel Point sounds every thirty seconds in fog.', host);
    const search = await call(gatewayUrl, 'POST', '/api/v1/memory/search', { headers: { host, 'x-api-key': memoryKey }, body: { query: 'When does the fog horn sound?' } });
    expect(search.status).toBe(200);
    expect(search.json.citations).toEqual([{ index: 1, title: expect.any(String), document_id: doc }]);
    // The memory is its own: the tenant's primary memory does not hold its document, and the mk_ key works on its
    // hostname only.
    const elsewhere = await call(gatewayUrl, 'GET', `/api/v1/memory/documents/${doc}`, { headers: { 'x-api-key': key } });
    expect(elsewhere.status).toBe(404);
    const offHost = await call(gatewayUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': memoryKey }, body: { query: 'fog horn' } });
    expect(offHost.status).toBe(403);
    expect(offHost.json.error.code).toBe('FORBIDDEN');

    // The ApiKey's Secret holds a read-only memory key of the tenant: it searches, it may not write.
    const ciKey = Buffer.from(await kubectlOk(['-n', userNs, 'get', 'secret', 'ci-lore-key', '-o', 'jsonpath={.data.api-key}']), 'base64').toString('utf8');
    expect(ciKey).toMatch(/^ck_live_/);
    const read = await call(gatewayUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': ciKey }, body: { query: 'Where is the Kestrel archive stored?' } });
    expect(read.status).toBe(200);
    expect(read.json.citations).toEqual(expect.arrayContaining([expect.objectContaining({ document_id: firstDoc })]));
    const write = await call(gatewayUrl, 'POST', '/api/v1/memory/ingest', { headers: { 'x-api-key': ciKey }, body: { content: 'A read-only key writes nothing.', content_type: 'text' } });
    expect(write.status).toBe(403);

    // kubectl delete returns once the operator's finalizer revoked the key (the gateway's shared revocation record
    // applies at once, whatever its credential cache holds) and deleted its Secret.
    await kubectlOk(['-n', userNs, 'delete', 'apikey', 'ci', '--wait=true', '--timeout=60s']);
    const refused = await call(gatewayUrl, 'POST', '/api/v1/memory/search', { headers: { 'x-api-key': ciKey }, body: { query: 'Kestrel' } });
    expect(refused.status).toBe(401);
    expect(refused.json.error.code).toBe('UNAUTHORIZED');
    const secretAfter = await kubectl(['-n', userNs, 'get', 'secret', 'ci-lore-key']);
    expect(secretAfter.stderr).toMatch(/NotFound/);
  });

  /** Ingests text (on a memory's hostname when given) and waits until the graph worker indexed it. */
  async function ingest(base: string, apiKey: string, content: string, host?: string): Promise<string> {
    const headers: Record<string, string> = { 'x-api-key': apiKey, ...(host ? { host } : {}) };
    const r = await call(base, 'POST', '/api/v1/memory/ingest', { headers, body: { content, content_type: 'text', routing: { mode: 'auto' } } });
    expect(r.status).toBe(200);
    const docId: string = r.json.doc_id;
    await until(`document ${docId} to be indexed`, async () => {
      const d = await call(base, 'GET', `/api/v1/memory/documents/${docId}`, { headers });
      if (d.json?.status === 'failed') throw new Error(`document ${docId} failed: ${d.text}`);
      return d.status === 200 && d.json.status === 'indexed' ? true : undefined;
    }, 60_000, procs['graph-worker']);
    return docId;
  }

  async function uploadAndSettle(filename: string, type: string, data: Buffer): Promise<{ status: string; error: string | null; extractor: string | null; doc_id: string | null }> {
    const form = new FormData();
    form.append('file', new Blob([data], { type }), filename);
    const res = await fetch(`${gatewayUrl}/api/v1/memory/uploads`, { method: 'POST', headers: { 'x-api-key': key }, body: form });
    const accepted = (await res.json()) as { upload_id: string; status: string };
    expect({ filename, status: res.status, upload: accepted.status }).toEqual({ filename, status: 202, upload: 'pending' });
    return until(`upload ${filename} to settle`, async () => {
      const r = await call(gatewayUrl, 'GET', `/api/v1/memory/uploads/${accepted.upload_id}`, { headers: { 'x-api-key': key } });
      return r.json?.status === 'completed' || r.json?.status === 'failed' ? r.json : undefined;
    }, 120_000, procs['graph-worker']);
  }
});

/** operator.md's Memory and ApiKey, without its IP allowlist (the requests here come from loopback). */
const MANIFESTS = `apiVersion: lore.dev/v1alpha1
kind: Memory
metadata: { name: notes }
spec: {}
---
apiVersion: lore.dev/v1alpha1
kind: ApiKey
metadata: { name: ci }
spec:
  type: live
  secretName: ci-lore-key
  scopes: { modules: [memory], access: read }
`;

/** A tenant's prospects as a CSV file: two fintech companies in Berlin, one in Hamburg, and a Berlin clinic. */
const COMPANIES_CSV = `Company,Website,Industry,City,Country,Employees
Kestrel Pay,https://kestrelpay.example,Fintech,Berlin,Germany,120
Osprey Ledger,https://ospreyledger.example,Fintech,Berlin,Germany,45
Harbour Bank,https://harbourbank.example,Fintech,Hamburg,Germany,300
Fjord Health,https://fjordhealth.example,Healthcare,Berlin,Germany,80
`;

/** The graph worker's consumer groups, as its readiness names them (logical names, without the install prefix). */
const GRAPH_WORKER_GROUPS = ['graph-worker', 'graph-worker-graph-jobs', 'graph-worker-lifecycle', 'graph-worker-uploads'];

/**
 * The consumer groups a worker's readiness reports it in (docs/runtime.md: `member`, or `rebalancing`, which is
 * still in the group), sorted; a check that is not ok reports none.
 */
function inGroups(body: any): string[] {
  const check: { ok: boolean; groups: Array<{ group: string; state: string }> } | undefined = body?.checks?.['consumer groups'];
  if (!check?.ok) return [];
  return check.groups.filter((g) => g.state === 'member' || g.state === 'rebalancing').map((g) => g.group).sort();
}

function hmacMatches(given: string | string[] | undefined, expected: string): boolean {
  const g = Buffer.from(String(given ?? ''));
  const e = Buffer.from(expected);
  return g.length === e.length && timingSafeEqual(g, e);
}

/**
 * Removes a namespace of this run. The test control plane has no namespace controller, so the objects the run left
 * are deleted first and the namespace is then finalized by hand (what that controller does once it is empty).
 */
async function removeNamespace(ns: string): Promise<void> {
  await kubectl(['-n', ns, 'delete', 'secrets,leases,ingresses', '--all', '--wait=false']);
  await kubectl(['delete', 'namespace', ns, '--wait=false']);
  const r = await kubectl(['get', 'namespace', ns, '-o', 'json']);
  if (r.code !== 0) return;
  const obj = JSON.parse(r.stdout);
  obj.spec = { ...obj.spec, finalizers: [] };
  await kubectl(['replace', '--raw', `/api/v1/namespaces/${ns}/finalize`, '-f', '-'], JSON.stringify(obj));
}

/** Deletes the gateway's Redis keys of this run (every key under a prefix), or the keys named. */
