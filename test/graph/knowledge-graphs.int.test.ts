import { TOPICS, type GraphJobMessage } from '@lore/contracts';
import { IDENTITY_HEADER, PostgresBlobStore, type Identity } from '@lore/runtime';
import { Client } from 'pg';
import { eventually, startHarness, type Harness } from '../memory/support';
import { uniqueSuffix } from '../support/infra';

jest.setTimeout(300_000);

/**
 * Spec 2's knowledge-graph routes through a real gateway (API keys, `Authorization: Bearer`) in front of the graph,
 * with the worker applying jobs from Kafka (`lore.graph.jobs`) on PostgreSQL: graphs, uploads, connector ingest,
 * generate, job status, the bi-temporal edges, redelivery and tenant isolation.
 */
describe('knowledge graphs (cluster mode, through the gateway)', () => {
  let h: Harness;
  const run = uniqueSuffix();
  const tenant = `t_kg_${run}`;
  const other = `t_kg_other_${run}`;
  const memory = `mem_kg_${run}`;
  const otherMemory = `mem_kg_other_${run}`;

  beforeAll(async () => {
    h = await startHarness({ backend: 'postgres', via: 'gateway' });
  });
  afterAll(async () => {
    await h?.close();
  });

  const who = (t = tenant, m = t === tenant ? memory : otherMemory): Identity => h.identity(t, m);
  const readOnly = (): Identity => h.identity(tenant, memory, { scopes: { access: 'read' } } as Partial<Identity>);
  const call = (method: string, path: string, body?: unknown, as: Identity = who()) => h.call(method, path, as, body);

  /** A request with `Authorization: Bearer <API_KEY>`, as spec 2 writes it. */
  async function bearer(method: string, path: string, body?: unknown, as: Identity = who()) {
    const target = await h.authorize(as, path);
    const headers: Record<string, string> = { authorization: `Bearer ${target.headers['x-api-key']}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(target.url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  }

  async function upload(listId: string | null, file: { name: string; bytes: Buffer | string } | null, as: Identity = who()) {
    const target = await h.authorize(as, '/memory/upload');
    const form = new FormData();
    if (listId !== null) form.append('list_id', listId);
    if (file) form.append('file', new Blob([file.bytes]), file.name);
    const res = await fetch(target.url, { method: 'POST', headers: target.headers, body: form });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  async function createGraph(name: string, as: Identity = who()) {
    const r = await call('POST', '/memory/departments/create', { name, description: `${name} graph`, source_type: 'department' }, as);
    expect(r.status).toBe(200);
    return r.body as { graph_id: string; list_id: string; tenant_id: string };
  }

  /** Waits for a job to end; returns its view. */
  const settled = (jobId: string, as: Identity = who()) =>
    eventually(async () => {
      const r = await call('GET', `/memory/jobs/${jobId}`, undefined, as);
      return r.status === 200 && (r.body.status === 'completed' || r.body.status === 'failed') ? r.body : undefined;
    }, 90_000, `job ${jobId}`);

  const rows = <T>(t: string, text: string, params: unknown[]) => h.db.withTenant(t, async (sql) => (await sql.query<T>(text, params)).rows);
  const nodesOf = (graphId: string, t = tenant) =>
    rows<{ node_id: string; label: string; name: string; resolution_key: string; properties: Record<string, unknown> }>(
      t,
      `SELECT node_id::text, label, name, resolution_key, properties FROM graph.kg_nodes WHERE tenant_id = $1 AND graph_id = $2 ORDER BY node_id`,
      [t, graphId],
    );
  const edgesOf = (graphId: string) =>
    rows<{ from_name: string; label: string; to_name: string; open: boolean; source_kind: string; source_id: string; valid_from: Date; valid_to: Date | null; recorded_at: Date }>(
      tenant,
      `SELECT f.name AS from_name, e.label, t.name AS to_name, e.valid_to IS NULL AS open, e.source_kind, e.source_id, e.valid_from, e.valid_to, e.recorded_at
         FROM graph.kg_edges e JOIN graph.kg_nodes f ON f.tenant_id = e.tenant_id AND f.graph_id = e.graph_id AND f.node_id = e.from_node
         JOIN graph.kg_nodes t ON t.tenant_id = e.tenant_id AND t.graph_id = e.graph_id AND t.node_id = e.to_node
        WHERE e.tenant_id = $1 AND e.graph_id = $2 ORDER BY e.edge_id`,
      [tenant, graphId],
    );
  const facts = (edges: Array<{ from_name: string; label: string; to_name: string }>) => edges.map((e) => `${e.from_name} -${e.label}-> ${e.to_name}`).sort();

  it('creates, lists and reads graphs: empty with no nodes or edges, tenant_id and list_id in the answer', async () => {
    const created = await createGraph('Sales');
    expect(created).toMatchObject({ name: 'Sales', description: 'Sales graph', source_type: 'department', status: 'empty', node_count: 0, edge_count: 0, tenant_id: tenant, message: null });
    expect(created.list_id).toBe(created.graph_id);
    const got = await bearer('GET', `/memory/departments/${created.graph_id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ ...created, tenant_id: undefined, list_id: undefined, ...got.body });
    expect(Object.keys(got.body).sort()).toEqual(['created_at', 'description', 'edge_count', 'graph_id', 'message', 'name', 'node_count', 'source_type', 'status', 'updated_at']);
    const list = await bearer('GET', '/memory/departments');
    expect(list.status).toBe(200);
    expect(list.body.departments.map((d: { graph_id: string }) => d.graph_id)).toContain(created.graph_id);
    // Only the name is required; defaults fill the rest.
    const bare = await bearer('POST', '/memory/departments/create', { name: 'Bare' });
    expect(bare.status).toBe(200);
    expect(bare.body).toMatchObject({ description: '', source_type: 'department', status: 'empty' });
  });

  it('answers spec 2\'s 422 detail for invalid bodies, 404 for unknown graphs and jobs, 403 to a read-only key', async () => {
    const missing = await call('POST', '/memory/departments/create', { description: 'no name' });
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'name'], type: expect.any(String), msg: expect.any(String) })]);
    const noSources = await call('POST', '/memory/ingest/connectors', { list_id: 'x', mode: 'full' });
    expect(noSources.status).toBe(422);
    expect(noSources.body.detail.map((d: { loc: string[] }) => d.loc.join('.'))).toEqual(['body.source_types']);
    const badMode = await call('POST', '/memory/ingest/connectors', { list_id: 'x', source_types: null, mode: 'sometimes' });
    expect(badMode.status).toBe(422);
    const badGenerate = await call('POST', '/memory/generate', { listId: 'x', records: 'none' });
    expect(badGenerate.status).toBe(422);
    expect(badGenerate.body.detail.map((d: { loc: string[] }) => d.loc.join('.')).sort()).toEqual(['body.columns', 'body.records']);
    expect((await call('GET', '/memory/departments/g_unknown')).status).toBe(404);
    expect((await call('GET', '/memory/jobs/gj_unknown')).status).toBe(404);
    expect((await call('POST', '/memory/ingest/connectors', { list_id: 'g_unknown', source_types: null })).status).toBe(404);
    const ro = readOnly();
    expect((await call('GET', '/memory/departments', undefined, ro)).status).toBe(200);
    // The gateway's refusals on these routes are spec 2's `{detail}` too, as the graph's own.
    const refused = await call('POST', '/memory/departments/create', { name: 'nope' }, ro);
    expect([refused.status, refused.body]).toEqual([403, { detail: expect.stringMatching(/read-only/) }]);
    expect(await upload('g_x', { name: 'a.csv', bytes: 'a\n1\n' }, ro)).toEqual({ status: 403, body: { detail: expect.stringMatching(/read-only/) } });
    // No credential at all: the gateway refuses.
    const anonymous = await fetch(`${h.url}/memory/departments`);
    expect([anonymous.status, await anonymous.json()]).toEqual([401, { detail: expect.any(String) }]);
  });

  it('builds a graph from an uploaded CSV: typed nodes, one company per domain, one person per profile, provenance by row', async () => {
    const g = await createGraph('People upload');
    const csv = [
      'Name,Title,Company,Website,LinkedIn,Location,Score',
      'Ada Lovelace,CTO,Initech,https://www.initech.example,https://www.linkedin.com/in/ada-lovelace/,Berlin,9',
      'Grace Hopper,VP Engineering,Initech Inc,initech.example,linkedin.com/in/grace-hopper,Paris,8',
      '"Lovelace, Ada",CTO,Initech,initech.example,https://linkedin.com/in/ada-lovelace,Berlin,7',
    ].join('\n');
    const accepted = await upload(g.graph_id, { name: 'people.csv', bytes: csv });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toEqual({ jobId: expect.stringMatching(/^gj_/), status: 'queued', message: expect.any(String) });
    expect((await call('GET', `/memory/departments/${g.graph_id}`)).body.status).toMatch(/^(building|ready)$/);
    const job = await settled(accepted.body.jobId);
    expect(job).toMatchObject({ status: 'completed', kind: 'upload', graph_id: g.graph_id, list_id: g.graph_id });
    const graph = (await call('GET', `/memory/departments/${g.graph_id}`)).body;
    expect(graph.status).toBe('ready');
    const nodes = await nodesOf(g.graph_id);
    const byLabel = (label: string) => nodes.filter((n) => n.label === label);
    // One company for the domain however its name is written; one person per profile URL however it is written.
    expect(byLabel('Company')).toHaveLength(1);
    expect(byLabel('Company')[0]!.resolution_key).toBe('domain:initech.example');
    expect(byLabel('Person').map((p) => p.properties.linkedin_url).sort()).toEqual(['https://linkedin.com/in/ada-lovelace', 'linkedin.com/in/grace-hopper']);
    for (const p of byLabel('Person')) expect(Object.keys(p.properties)).toEqual(expect.arrayContaining(['name', 'linkedin_url']));
    expect(byLabel('Location').map((l) => l.name).sort()).toEqual(['Berlin', 'Paris']);
    expect(byLabel('ScanReport')).toHaveLength(3);
    expect(byLabel('Position').length).toBeGreaterThanOrEqual(2);
    expect(graph.node_count).toBe(nodes.length);
    const edges = await edgesOf(g.graph_id);
    expect(graph.edge_count).toBe(edges.filter((e) => e.open).length);
    expect(facts(edges)).toEqual(expect.arrayContaining(['Ada Lovelace -WORKS_AT-> Initech', 'Grace Hopper -LOCATED_IN-> Paris', 'Ada Lovelace -HOLDS_POSITION-> CTO']));
    for (const e of edges) {
      expect(e.source_kind).toBe('row');
      expect(e.source_id).toMatch(/^people\.csv#[234]$/);
      expect(e.valid_to).toBeNull();
      expect(e.recorded_at).toBeInstanceOf(Date);
    }
    expect(job.stats).toMatchObject({ rows: 3, node_count: nodes.length, edge_count: edges.length });
  });

  it('refuses an empty file, a missing list_id or file, an unknown graph and a huge file at once; fails a malformed or too-long table with the graph unchanged', async () => {
    const g = await createGraph('Guarded');
    const first = await upload(g.graph_id, { name: 'ok.csv', bytes: 'Company,Domain\nAcme,acme.example\n' });
    expect((await settled(first.body.jobId)).status).toBe('completed');
    const before = (await call('GET', `/memory/departments/${g.graph_id}`)).body;
    const edgesBefore = await edgesOf(g.graph_id);
    expect(before).toMatchObject({ status: 'ready', node_count: 2, edge_count: 1 });

    const empty = await upload(g.graph_id, { name: 'empty.csv', bytes: '' });
    expect(empty.status).toBe(422);
    expect(empty.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'file'], msg: 'the file is empty' })]);
    const noList = await upload(null, { name: 'a.csv', bytes: 'a\n1\n' });
    expect(noList.status).toBe(422);
    expect(noList.body.detail.map((d: { loc: string[] }) => d.loc.join('.'))).toEqual(['body.list_id']);
    const noFile = await upload(g.graph_id, null);
    expect(noFile.status).toBe(422);
    expect(noFile.body.detail.map((d: { loc: string[] }) => d.loc.join('.'))).toEqual(['body.file']);
    expect((await upload('g_nowhere', { name: 'a.csv', bytes: 'a\n1\n' })).status).toBe(404);
    const huge = await upload(g.graph_id, { name: 'huge.csv', bytes: Buffer.alloc(25 * 1024 * 1024 + 1, 'a') });
    expect(huge.status).toBe(413);
    expect(huge.body.detail).toMatch(/limited to 26214400 bytes/);
    // The same without Content-Length (chunked): the limit is counted while reading.
    const target = await h.authorize(who(), '/memory/upload');
    const boundary = `kg-${run}`;
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="list_id"\r\n\r\n${g.graph_id}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="huge.csv"\r\nContent-Type: text/csv\r\n\r\n`);
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(head);
        if (sent < 26) controller.enqueue(chunk);
        else {
          controller.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`));
          controller.close();
        }
        sent += 1;
      },
    });
    const chunked = await fetch(target.url, { method: 'POST', headers: { ...target.headers, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: stream, duplex: 'half' } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(((await chunked.json()) as { detail: string }).detail).toMatch(/limited to 26214400 bytes/);
    // A body that ends inside a part (the file part read, or another part drained) is 400, and the process
    // that read it keeps serving: the cut part's own stream error used to go unheard and end it.
    for (const name of ['file', 'other']) {
      const cut = `--${boundary}\r\nContent-Disposition: form-data; name="list_id"\r\n\r\n${g.graph_id}\r\n--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="cut.csv"\r\n\r\nCompany,Domain\r\nCut,cut.example\r\n`;
      const res = await fetch(target.url, { method: 'POST', headers: { ...target.headers, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: cut });
      expect({ name, status: res.status, body: await res.json() }).toEqual({ name, status: 400, body: { detail: 'the multipart body is malformed' } });
    }
    expect((await call('GET', `/memory/departments/${g.graph_id}`)).body).toMatchObject({ status: 'ready', node_count: 2, edge_count: 1 });

    const cases: Array<[string, string, RegExp]> = [
      ['broken.csv', 'Company,Domain\n"Acme,acme.example\nBeta,beta.example\n', /quoted field is never closed/],
      ['ragged.csv', 'Company,Domain\nAcme,acme.example,extra\n', /different number of fields/],
      ['header-only.csv', 'Company,Domain\n', /header and no rows/],
      ['blank.csv', '\n\n  \n', /the file is empty/],
      ['nul.csv', `Company,Domain\n${'Acme,acme.example\n'.repeat(500)}Ev\u0000il,evil.example\n`, /binary data/],
      ['rows.csv', `Company\n${Array.from({ length: 100_001 }, (_, i) => `C${i}`).join('\n')}\n`, /more than 100000 rows/],
    ];
    for (const [name, bytes, reason] of cases) {
      const accepted = await upload(g.graph_id, { name, bytes });
      expect({ name, status: accepted.status }).toEqual({ name, status: 200 });
      const job = await settled(accepted.body.jobId);
      expect({ name, status: job.status }).toEqual({ name, status: 'failed' });
      expect(job.message).toMatch(reason);
      const graph = (await call('GET', `/memory/departments/${g.graph_id}`)).body;
      expect(graph).toMatchObject({ status: 'error', node_count: 2, edge_count: 1 });
      expect(graph.message).toMatch(reason);
      expect(await edgesOf(g.graph_id)).toEqual(edgesBefore);
    }
    // The next good job makes the graph ready again.
    const again = await upload(g.graph_id, { name: 'ok.csv', bytes: 'Company,Domain\nAcme,acme.example\n' });
    expect((await settled(again.body.jobId)).status).toBe('completed');
    expect((await call('GET', `/memory/departments/${g.graph_id}`)).body).toMatchObject({ status: 'ready', message: null, node_count: 2, edge_count: 1 });
  });

  it('rolls a job back whole when the database refuses a write halfway: no node or edge of it stays, and the job fails with the reason', async () => {
    const g = await createGraph('Atomic');
    const first = await upload(g.graph_id, { name: 'base.csv', bytes: 'Company,Domain\nAcme,acme.example\n' });
    expect((await settled(first.body.jobId)).status).toBe('completed');
    const nodesBefore = await nodesOf(g.graph_id);
    const edgesBefore = await edgesOf(g.graph_id);
    // A trigger (installed by the database owner for this test only) refuses the edges of one file's last row, after
    // the job's nodes and its other edges were written in the same transaction.
    const owner = new Client({ connectionString: (h as Harness & { database: { ownerUrl: string } }).database.ownerUrl });
    await owner.connect();
    try {
      await owner.query(`CREATE FUNCTION graph.refuse_test_edge() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.source_id = 'explode.csv#4' THEN RAISE EXCEPTION 'refused for the test' USING ERRCODE = '22023'; END IF; RETURN NEW; END $$`);
      await owner.query(`CREATE TRIGGER refuse_test_edge BEFORE INSERT ON graph.kg_edges FOR EACH ROW EXECUTE FUNCTION graph.refuse_test_edge()`);
      const accepted = await upload(g.graph_id, { name: 'explode.csv', bytes: 'Company,Domain\nBeta,beta.example\nGamma,gamma.example\nDelta,delta.example\n' });
      const job = await settled(accepted.body.jobId);
      expect(job).toMatchObject({ status: 'failed', message: expect.stringContaining('22023') });
    } finally {
      await owner.query('DROP TRIGGER IF EXISTS refuse_test_edge ON graph.kg_edges').catch(() => undefined);
      await owner.query('DROP FUNCTION IF EXISTS graph.refuse_test_edge()').catch(() => undefined);
      await owner.end();
    }
    expect(await nodesOf(g.graph_id)).toEqual(nodesBefore);
    expect(await edgesOf(g.graph_id)).toEqual(edgesBefore);
    expect((await call('GET', `/memory/departments/${g.graph_id}`)).body).toMatchObject({ status: 'error', node_count: nodesBefore.length, edge_count: edgesBefore.length });
  });

  it('takes a name as long as a field may be: its key is bounded, the same name meets its own node again, and nothing is retried', async () => {
    const g = await createGraph('Long names');
    // 9,000 letters that do not compress: as a key whole, its index row would pass PostgreSQL's 8 KiB.
    let seed = 7;
    const letter = () => String.fromCharCode(97 + ((seed = (seed * 1103515245 + 12345) % 2147483648) % 26));
    const long = Array.from({ length: 9_000 }, letter).join('');
    const other = `${long.slice(0, 8_999)}${long.endsWith('a') ? 'b' : 'a'}`;
    for (const [name, rows] of [['long-1.csv', [long]], ['long-2.csv', [long, other]]] as const) {
      const accepted = await upload(g.graph_id, { name, bytes: ['company,city', ...rows.map((r) => `${r},Paris`)].join('\n') });
      expect(accepted.status).toBe(200);
      expect(await settled(accepted.body.jobId)).toMatchObject({ status: 'completed' });
    }
    const companies = (await nodesOf(g.graph_id)).filter((n) => n.label === 'Company');
    // The same long name twice is one company; one differing in its last letter is another.
    expect(companies.map((c) => c.name.length)).toEqual([9_000, 9_000]);
    for (const c of companies) expect(c.resolution_key).toMatch(/^name:[a-z]{395}#sha256:[0-9a-f]{64}$/);
    expect(new Set(companies.map((c) => c.resolution_key)).size).toBe(2);
    expect((await call('GET', `/memory/departments/${g.graph_id}`)).body.status).toBe('ready');
  });

  it('closes the facts of rows a shorter version of a file no longer has, and only of that file', async () => {
    const g = await createGraph('Staff');
    const up = async (name: string, lines: string[]) => {
      const accepted = await upload(g.graph_id, { name, bytes: ['name,company', ...lines].join('\n') });
      expect(accepted.status).toBe(200);
      return settled(accepted.body.jobId);
    };
    await up('staff.csv', ['Ada Brook,Acme', 'Bob Stone,Acme', 'Cy Reed,Initech']);
    await up('other.csv', ['Dee Lane,Initech']);
    const shorter = await up('staff.csv', ['Ada Brook,Acme']);
    expect(shorter).toMatchObject({ status: 'completed' });
    expect(shorter.stats.edges_closed).toBeGreaterThan(0);
    const open = facts((await edgesOf(g.graph_id)).filter((e) => e.open));
    expect(open).toContain('Ada Brook -WORKS_AT-> Acme');
    expect(open).toContain('Dee Lane -WORKS_AT-> Initech');
    expect(open).not.toContain('Bob Stone -WORKS_AT-> Acme');
    expect(open).not.toContain('Cy Reed -WORKS_AT-> Initech');
    // What the removed rows said stays as history, closed.
    const closed = facts((await edgesOf(g.graph_id)).filter((e) => !e.open));
    expect(closed).toEqual(expect.arrayContaining(['Bob Stone -WORKS_AT-> Acme', 'Cy Reed -WORKS_AT-> Initech']));
    const chat = await call('POST', '/memory/chat', { listId: g.graph_id, question: 'Where does Bob Stone work?' });
    expect(chat.status).toBe(200);
    expect(chat.body.edges.filter((e: { valid_to?: string | null }) => !e.valid_to).map((e: { label: string }) => e.label)).not.toContain('WORKS_AT');
  });

  it('applies a redelivered job message once', async () => {
    const g = await createGraph('Redelivery');
    const accepted = await upload(g.graph_id, { name: 'r.csv', bytes: 'Name,Company,Domain\nAda Lovelace,Initech,initech.example\n' });
    const job = await settled(accepted.body.jobId);
    const nodes = await nodesOf(g.graph_id);
    const edges = await edgesOf(g.graph_id);
    // The same message again, with its event id, and a new message of the same finished job.
    const sent = (await h.db.query<{ event_id: string; value: GraphJobMessage }>(`SELECT event_id, value FROM runtime.outbox WHERE topic = $1 AND value->>'job_id' = $2`, [TOPICS.graphJobs, job.jobId])).rows;
    expect(sent).toHaveLength(1);
    const message = sent[0]!;
    await h.bus.publish(TOPICS.graphJobs, [{ key: g.graph_id, value: JSON.stringify(message.value), headers: { 'event-id': message.event_id } }]);
    await h.bus.publish(TOPICS.graphJobs, [{ key: g.graph_id, value: JSON.stringify({ ...message.value, event_id: 'gjm_again' }), headers: { 'event-id': 'gjm_again' } }]);
    await eventually(async () => (h.logs.text().split('\n').filter((l) => l.includes('graph job handled') && l.includes(job.jobId) && l.includes('duplicate')).length >= 2 ? true : undefined), 60_000, 'redeliveries handled');
    expect(await nodesOf(g.graph_id)).toEqual(nodes);
    expect(await edgesOf(g.graph_id)).toEqual(edges);
  });

  describe('connector ingest', () => {
    const PUSH = '/internal/v1/connector-documents';
    const adminOf = (t: string, m: string) => h.identity(t, m, { role: 'tenant_admin' });
    const doc = (id: string, text: string, sourceType: string) => ({
      id,
      title: `Doc ${id}`,
      text,
      link: `https://intranet.example.test/${id}`,
      source_type: sourceType,
      updated_at: null,
      primary_owners: null,
      secondary_owners: null,
      metadata: {},
      content_hash: `${id}:${text.length}:${text.slice(0, 20)}`,
    });
    const push = async (t: string, m: string, ccPairId: number, documents: unknown[]) => {
      const r = await h.callGraph('POST', PUSH, adminOf(t, m), { cc_pair_id: ccPairId, access: { public: true, groups: [] }, documents });
      expect(r.status).toBe(200);
    };

    beforeAll(async () => {
      await push(tenant, memory, 41, [doc('wiki/ada', 'Dr. Ada Lovelace leads research at Initech Corp. The team meets in Berlin every spring.', 'web')]);
      await push(tenant, memory, 42, [doc('drive/grace', 'Dr. Grace Hopper advises Umbrella Corp. She lives in Paris.', 'google_drive')]);
      // Another tenant's connector documents never reach this tenant's graphs.
      await push(other, otherMemory, 43, [doc('wiki/eve', 'Dr. Eve Secret works at Hidden Corp in Oslo.', 'web')]);
    });

    it('reads every source with source_types null and only the listed ones otherwise; graph_name creates the graph', async () => {
      const listId = `kg-conn-all-${run}`;
      const all = await call('POST', '/memory/ingest/connectors', { list_id: listId, source_types: null, graph_name: 'All sources' });
      expect(all.status).toBe(200);
      expect(all.body).toMatchObject({ status: 'queued', jobId: expect.any(String) });
      expect((await settled(all.body.jobId)).status).toBe('completed');
      const created = (await call('GET', `/memory/departments/${listId}`)).body;
      expect(created).toMatchObject({ graph_id: listId, name: 'All sources', source_type: 'connectors', status: 'ready' });
      const allNodes = (await nodesOf(listId)).map((n) => `${n.label}:${n.name}`);
      expect(allNodes).toEqual(expect.arrayContaining(['Person:Ada Lovelace', 'Company:Initech Corp', 'Location:Berlin', 'Person:Grace Hopper', 'Company:Umbrella Corp', 'Location:Paris']));
      expect(allNodes.join(' ')).not.toMatch(/Eve Secret|Hidden Corp|Oslo/);
      expect(allNodes.filter((n) => n.startsWith('Document:'))).toHaveLength(2);

      const webId = `kg-conn-web-${run}`;
      const web = await call('POST', '/memory/ingest/connectors', { list_id: webId, source_types: ['web'], mode: 'full', graph_name: 'Web only' });
      expect((await settled(web.body.jobId)).status).toBe('completed');
      const webNodes = (await nodesOf(webId)).map((n) => `${n.label}:${n.name}`);
      expect(webNodes).toEqual(expect.arrayContaining(['Person:Ada Lovelace', 'Company:Initech Corp']));
      expect(webNodes.join(' ')).not.toMatch(/Grace Hopper|Umbrella/);
      const edges = await edgesOf(webId);
      expect(edges.every((e) => e.source_kind === 'document' && e.source_id === `${memory}/41/wiki/ada`)).toBe(true);

      // A source Lore has no connector for is refused, naming those it has; a known one with no document reads nothing.
      const unknown = await call('POST', '/memory/ingest/connectors', { list_id: webId, source_types: ['confluence'] });
      expect([unknown.status, unknown.body.detail]).toEqual([422, [{ loc: ['body', 'source_types', 0], msg: expect.stringMatching(/the sources are web, file, google_drive$/), type: 'value_error' }]]);
      const none = await call('POST', '/memory/ingest/connectors', { list_id: webId, source_types: ['file'] });
      const noneJob = await settled(none.body.jobId);
      expect(noneJob).toMatchObject({ status: 'completed', stats: expect.objectContaining({ rows: 0 }) });
      expect((await edgesOf(webId)).filter((e) => e.open)).toHaveLength(edges.length);
    });

    it('erases a deleted memory\'s facts and the nodes only they gave from the graphs built from it, and keeps the rest', async () => {
      const t = `t_kg_erase_${run}`;
      const keep = `mem_kg_keep_${run}`;
      const gone = `mem_kg_gone_${run}`;
      await push(t, keep, 61, [doc('wiki/keep', 'Dr. Ada Lovelace leads research at Initech Corp. The team meets in Berlin every spring.', 'web')]);
      await push(t, gone, 62, [doc('wiki/gone', 'Dr. Ada Lovelace met Dr. Zed Quill in Oslo. He leads Quill Corp.', 'web')]);
      const admin = adminOf(t, keep);
      const listId = `kg-erase-${run}`;
      const ingest = await h.callGraph('POST', '/memory/ingest/connectors', admin, { list_id: listId, source_types: null, graph_name: 'Both memories' });
      expect(ingest.status).toBe(200);
      await eventually(async () => {
        const j = await h.callGraph('GET', `/memory/jobs/${ingest.body.jobId}`, admin);
        return j.body.status === 'completed' ? true : undefined;
      }, 90_000, 'the ingest');
      const names = async () => (await nodesOf(listId, t)).map((n) => `${n.label}:${n.name}`);
      expect(await names()).toEqual(expect.arrayContaining(['Document:Doc wiki/keep', 'Document:Doc wiki/gone', 'Person:Zed Quill', 'Company:Quill Corp', 'Location:Oslo', 'Person:Ada Lovelace']));
      const places = async () => (await rows<{ p: unknown }>(t, `SELECT source_places AS p FROM graph.knowledge_graphs WHERE tenant_id = $1 AND graph_id = $2`, [t, listId]))[0]!.p as Array<{ memory_id: string }>;
      expect((await places()).map((x) => x.memory_id).sort()).toEqual([gone, keep].sort());

      // The gateway announces the memory's erasure.
      const eventId = `evt_erase_${run}`;
      const message = { event_id: eventId, type: 'memory.deleted', tenant_id: t, memory_id: gone, retain_data: false, occurred_at: new Date().toISOString() };
      await h.bus.publish(TOPICS.memoryLifecycle, [{ key: gone, value: JSON.stringify(message), headers: { 'event-id': eventId } }]);
      await eventually(async () => (h.logs.text().split('\n').some((l) => l.includes('memory erased') && l.includes(gone)) ? true : undefined), 90_000, 'the erasure');

      const after = await names();
      expect(after).toEqual(expect.arrayContaining(['Document:Doc wiki/keep', 'Person:Ada Lovelace', 'Company:Initech Corp', 'Location:Berlin']));
      expect(after.join(' ')).not.toMatch(/wiki\/gone|Zed Quill|Quill Corp|Oslo/);
      const left = await rows<{ n: number }>(t, `SELECT count(*)::int AS n FROM graph.kg_edges WHERE tenant_id = $1 AND graph_id = $2 AND source_ref->>'memory_id' = $3`, [t, listId, gone]);
      expect(left[0]!.n).toBe(0);
      expect((await places()).map((x) => x.memory_id)).toEqual([keep]);
      const graph = await h.callGraph('GET', `/memory/departments/${listId}`, admin);
      expect(graph.body.node_count).toBe(after.length);
    });

    it('leaves out the documents of a memory an erasure has begun on, which the erasure would not find again', async () => {
      const t = `t_kg_erasing_${run}`;
      const kept = `mem_kg_kept_${run}`;
      const going = `mem_kg_going_${run}`;
      await push(t, kept, 71, [doc('wiki/stay', 'Dr. Ivo Stay leads research at Staywell Corp. The team meets in Graz.', 'web')]);
      await push(t, going, 72, [doc('wiki/leave', 'Dr. Lea Leave leads research at Leaving Corp. The team meets in Linz.', 'web')]);
      // The erasure of `going` has begun (its tombstone is written) and its documents are not deleted yet.
      await h.db.withTenant(t, (sql) => sql.query(`UPDATE graph.memories SET erase_requested_at = now() WHERE tenant_id = $1 AND memory_id = $2`, [t, going]));
      const admin = adminOf(t, kept);
      const listId = `kg-erasing-${run}`;
      const ingest = await h.callGraph('POST', '/memory/ingest/connectors', admin, { list_id: listId, source_types: null, graph_name: 'During an erasure' });
      expect(ingest.status).toBe(200);
      await eventually(async () => {
        const j = await h.callGraph('GET', `/memory/jobs/${ingest.body.jobId}`, admin);
        return j.body.status === 'completed' ? true : undefined;
      }, 90_000, 'the ingest');
      const names = (await nodesOf(listId, t)).map((n) => n.name).join(' ');
      expect(names).toMatch(/Staywell Corp/);
      expect(names).not.toMatch(/Leaving Corp|wiki\/leave|Lea Leave/);
      const places = (await rows<{ p: Array<{ memory_id: string }> }>(t, `SELECT source_places AS p FROM graph.knowledge_graphs WHERE tenant_id = $1 AND graph_id = $2`, [t, listId]))[0]!.p;
      expect(places.map((x) => x.memory_id)).toEqual([kept]);
    });

    it('keeps a graph built from a document only administrators may see to administrators: to a member it is absent everywhere', async () => {
      // A tenant of its own, so its private document shows in no other test's graph. The member's requests go to the
      // graph with their signed identity (a gateway key is always the tenant's); the administrator's through the
      // gateway with the tenant's key.
      const t = `t_kg_private_${run}`;
      const m = `mem_kg_private_${run}`;
      const admin = adminOf(t, m);
      const member = h.identity(t, m, { role: 'member' } as Partial<Identity>);
      const asMember = (method: string, path: string, body?: unknown) => h.callGraph(method, path, member, body);
      const r = await h.callGraph('POST', PUSH, admin, { cc_pair_id: 51, access: { public: false, groups: [] }, documents: [doc('memo/merger', 'Dr. Hana Vogel leads the merger with Hidden Dynamics Corp in Zurich.', 'file')] });
      expect(r.status).toBe(200);
      await push(t, m, 52, [doc('wiki/open', 'Dr. Omar Field works at Open Corp in Lisbon.', 'web')]);
      const finished = (jobId: string, as: (method: string, path: string) => Promise<{ body: any }>) =>
        eventually(async () => {
          const j = (await as('GET', `/memory/jobs/${jobId}`)).body;
          return j?.status === 'completed' || j?.status === 'failed' ? j : undefined;
        }, 60_000, `job ${jobId}`);

      // A member's ingest reads the public document only, and its graph stays the member's to read.
      const memberGraph = `kg-member-${run}`;
      const mine = await asMember('POST', '/memory/ingest/connectors', { list_id: memberGraph, source_types: null, graph_name: 'Member' });
      expect(mine.status).toBe(200);
      expect((await finished(mine.body.jobId, asMember)).status).toBe('completed');
      expect((await asMember('GET', `/memory/departments/${memberGraph}`)).body).toMatchObject({ status: 'ready' });
      expect((await nodesOf(memberGraph, t)).map((n) => n.name).join(' ')).not.toMatch(/Hidden Dynamics|Hana Vogel/);

      // An administrator's ingest takes the private document too: that graph is the administrators' alone.
      const asAdmin = (method: string, path: string, body?: unknown) => call(method, path, body, admin);
      const adminGraph = `kg-admin-${run}`;
      const theirs = await asAdmin('POST', '/memory/ingest/connectors', { list_id: adminGraph, source_types: null, graph_name: 'Admin' });
      expect((await finished(theirs.body.jobId, asAdmin)).status).toBe('completed');
      // A file's Document node is named by its file name (the last segment of its source id), a page's by its title.
      expect((await nodesOf(adminGraph, t)).map((n) => n.name)).toEqual(expect.arrayContaining(['Hidden Dynamics Corp', 'merger', 'Doc wiki/open']));
      const ask = { listId: adminGraph, question: 'What does Doc memo/merger mention?' };
      expect((await asAdmin('POST', '/memory/chat', ask)).status).toBe(200);
      expect((await asAdmin('GET', `/memory/departments/${adminGraph}`)).status).toBe(200);
      const form = new FormData();
      form.append('list_id', adminGraph);
      form.append('file', new Blob(['Company\nEvil\n']), 'x.csv');
      const upload = await fetch(`${h.graphUrl}/memory/upload`, { method: 'POST', headers: { [IDENTITY_HEADER]: await h.signer.sign(member) }, body: form });
      const absent = [
        await asMember('GET', `/memory/departments/${adminGraph}`),
        await asMember('GET', `/memory/jobs/${theirs.body.jobId}`),
        await asMember('POST', '/memory/chat', ask),
        { status: upload.status, body: await upload.json() },
        await asMember('POST', '/memory/ingest/connectors', { list_id: adminGraph, source_types: null, graph_name: 'Again' }),
        await asMember('POST', '/memory/generate', { listId: adminGraph, records: [], columns: [{ id: 'name', header: 'Company', type: 'fixed' }] }),
      ];
      expect(absent.map((x) => [x.status, x.body])).toEqual(absent.map(() => [404, { detail: expect.stringMatching(/not found/) }]));
      const listed = async (list: () => Promise<{ body: any }>) => ((await list()).body.departments as Array<{ graph_id: string }>).map((d) => d.graph_id).sort();
      expect(await listed(() => asMember('GET', '/memory/departments'))).toEqual([memberGraph]);
      expect(await listed(() => asAdmin('GET', '/memory/departments'))).toEqual([adminGraph, memberGraph].sort());

      // The public document the member's graph took is made private (its content unchanged): the graph that holds it
      // becomes the administrators' alone too.
      const closed = await h.callGraph('POST', PUSH, admin, { cc_pair_id: 52, access: { public: false, groups: [] }, documents: [doc('wiki/open', 'Dr. Omar Field works at Open Corp in Lisbon.', 'web')] });
      expect(closed.status).toBe(200);
      expect((await asMember('GET', `/memory/departments/${memberGraph}`)).status).toBe(404);
      expect((await asMember('POST', '/memory/chat', { listId: memberGraph, question: 'Where does Omar Field work?' })).status).toBe(404);
      expect(await listed(() => asMember('GET', '/memory/departments'))).toEqual([]);
      expect((await asAdmin('GET', `/memory/departments/${memberGraph}`)).status).toBe(200);
    });

    it('closes the edges a changed document no longer says and opens the new ones on an incremental ingest; a deleted document closes its edges', async () => {
      const listId = `kg-conn-inc-${run}`;
      const full = await call('POST', '/memory/ingest/connectors', { list_id: listId, source_types: ['web'], mode: 'full', graph_name: 'Incremental' });
      expect((await settled(full.body.jobId)).status).toBe('completed');
      const before = await edgesOf(listId);
      expect(facts(before.filter((e) => e.open))).toEqual(['Doc wiki/ada -MENTIONS-> Ada Lovelace', 'Doc wiki/ada -MENTIONS-> Berlin', 'Doc wiki/ada -MENTIONS-> Initech Corp']);

      // The same source document changes: Ada moved to Munich, and Initech stays.
      await push(tenant, memory, 41, [doc('wiki/ada', 'Dr. Ada Lovelace leads research at Initech Corp. The team now meets in Munich.', 'web')]);
      const inc = await call('POST', '/memory/ingest/connectors', { list_id: listId, source_types: ['web'], mode: 'incremental' });
      const job = await settled(inc.body.jobId);
      expect(job).toMatchObject({ status: 'completed', stats: expect.objectContaining({ rows: 1, edges_closed: 1, edges_opened: 1 }) });
      const after = await edgesOf(listId);
      expect(facts(after.filter((e) => e.open))).toEqual(['Doc wiki/ada -MENTIONS-> Ada Lovelace', 'Doc wiki/ada -MENTIONS-> Initech Corp', 'Doc wiki/ada -MENTIONS-> Munich']);
      const closed = after.filter((e) => !e.open);
      expect(facts(closed)).toEqual(['Doc wiki/ada -MENTIONS-> Berlin']);
      // The closed fact keeps when it started and says when it stopped; the unchanged ones are the same rows.
      const berlinBefore = before.find((e) => e.to_name === 'Berlin')!;
      expect(closed[0]!.valid_from).toEqual(berlinBefore.valid_from);
      expect(closed[0]!.valid_to!.getTime()).toBeGreaterThanOrEqual(closed[0]!.valid_from.getTime());
      expect(after.find((e) => e.to_name === 'Initech Corp')!.valid_from).toEqual(before.find((e) => e.to_name === 'Initech Corp')!.valid_from);
      expect((await call('GET', `/memory/departments/${listId}`)).body.edge_count).toBe(3);

      // An incremental ingest with nothing changed reads nothing.
      const quiet = await call('POST', '/memory/ingest/connectors', { list_id: listId, source_types: ['web'], mode: 'incremental' });
      expect((await settled(quiet.body.jobId)).stats).toMatchObject({ rows: 0, edges_opened: 0, edges_closed: 0 });

      // The connector deletes the document: its facts stop being current, and stay in the history.
      const del = await h.callGraph('POST', '/internal/v1/connector-documents/delete', adminOf(tenant, memory), { cc_pair_id: 41, ids: ['wiki/ada'] });
      expect(del.status).toBe(200);
      const gone = await call('POST', '/memory/ingest/connectors', { list_id: listId, source_types: ['web'], mode: 'incremental' });
      expect((await settled(gone.body.jobId)).stats).toMatchObject({ edges_closed: 3 });
      expect((await edgesOf(listId)).filter((e) => e.open)).toHaveLength(0);
      expect(await edgesOf(listId)).toHaveLength(4);
    });
  });

  it('generates a graph from a saved list\'s records and columns (fixed and dynamic), creating it when listId names none; a changed cell closes its fact', async () => {
    const listId = `list-${run}`;
    const columns = [
      { id: 'name', header: 'Name', type: 'fixed', columnType: 'text', dataType: 'string', width: 200, maxWidth: 600, minWidth: 80, required: true },
      { id: 'title', header: 'Title', type: 'fixed' },
      { id: 'company', header: 'Company', type: 'fixed' },
      { id: 'profile_url', header: 'Profile', type: 'fixed' },
      { id: 'location', header: 'Location', type: 'fixed' },
      { id: 'fit_score', header: 'Fit score', type: 'dynamic' },
    ];
    const cell = (rowId: string, columnId: string, value: string) => ({ row_id: rowId, column_id: columnId, value, status: 'completed', metadata: { source: 'web' }, expandable: false, _id: `${rowId}:${columnId}` });
    const record = (rowId: string, values: Record<string, string>) => ({
      cells: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, cell(rowId, k, v)])),
      step_source: 'data_collection',
      metadata: { source: 'people_search', _id: rowId, uniqueID: rowId },
    });
    const records = [
      record('r_1', { name: 'Ada Lovelace', title: 'CTO', company: 'Initech', profile_url: 'https://linkedin.com/in/ada', location: 'Berlin', fit_score: '9' }),
      record('r_2', { name: 'Alan Turing', title: 'Chief Scientist', company: 'Initech', profile_url: 'https://linkedin.com/in/alan', location: 'London', fit_score: '' }),
    ];
    const r = await bearer('POST', '/memory/generate', { listId, workflowCategory: 'people_search', records, columns });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'queued' });
    expect((await settled(r.body.jobId)).status).toBe('completed');
    const graph = (await call('GET', `/memory/departments/${listId}`)).body;
    expect(graph).toMatchObject({ graph_id: listId, source_type: 'list', status: 'ready', name: 'people_search' });
    const nodes = await nodesOf(listId);
    expect(nodes.filter((n) => n.label === 'Person').map((n) => n.properties)).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'Ada Lovelace', linkedin_url: 'https://linkedin.com/in/ada' })]),
    );
    expect(nodes.filter((n) => n.label === 'Company')).toHaveLength(1);
    const report = nodes.find((n) => n.label === 'ScanReport' && n.name === 'Ada Lovelace')!;
    expect(report.properties).toMatchObject({ 'Fit score': '9', Title: 'CTO' });
    const edges = await edgesOf(listId);
    const worksAt = edges.find((e) => e.from_name === 'Ada Lovelace' && e.label === 'WORKS_AT')!;
    expect(worksAt).toMatchObject({ source_kind: 'cell', source_id: 'r_1:company', open: true });

    // The list again with Ada in Paris: the Berlin fact closes, Paris opens, the rest stays as it was.
    records[0] = record('r_1', { name: 'Ada Lovelace', title: 'CTO', company: 'Initech', profile_url: 'https://linkedin.com/in/ada', location: 'Paris', fit_score: '9' });
    const again = await call('POST', '/memory/generate', { listId, workflowCategory: 'people_search', records, columns });
    expect((await settled(again.body.jobId)).stats).toMatchObject({ edges_closed: 1, edges_opened: 1 });
    const after = await edgesOf(listId);
    expect(facts(after.filter((e) => !e.open))).toEqual(['Ada Lovelace -LOCATED_IN-> Berlin']);
    expect(facts(after.filter((e) => e.open))).toContain('Ada Lovelace -LOCATED_IN-> Paris');
  });

  it('keeps every graph and job to its tenant: another tenant\'s ids answer 404 and its lists never show them', async () => {
    const mine = await createGraph('Private');
    const accepted = await upload(mine.graph_id, { name: 'p.csv', bytes: 'Company,Domain\nAcme,acme.example\n' });
    await settled(accepted.body.jobId);
    const stranger = who(other);
    expect((await call('GET', `/memory/departments/${mine.graph_id}`, undefined, stranger)).status).toBe(404);
    expect((await call('GET', `/memory/jobs/${accepted.body.jobId}`, undefined, stranger)).status).toBe(404);
    expect((await upload(mine.graph_id, { name: 'x.csv', bytes: 'Company\nEvil\n' }, stranger)).status).toBe(404);
    expect((await call('POST', '/memory/ingest/connectors', { list_id: mine.graph_id, source_types: null }, stranger)).status).toBe(404);
    const list = await call('GET', '/memory/departments', undefined, stranger);
    expect(list.status).toBe(200);
    expect(list.body.departments.map((d: { graph_id: string }) => d.graph_id)).not.toContain(mine.graph_id);
    // Generating into the same list id from the other tenant makes the other tenant's own graph, never touching ours.
    const theirs = await call('POST', '/memory/generate', { listId: mine.graph_id, records: [], columns: [{ id: 'name', header: 'Company', type: 'fixed' }] }, stranger);
    expect(theirs.status).toBe(200);
    await settled(theirs.body.jobId, stranger);
    expect((await call('GET', `/memory/departments/${mine.graph_id}`)).body).toMatchObject({ name: 'Private', node_count: 2 });
    // Row-level security: the other tenant's transaction sees none of our rows even without a tenant condition.
    const seen = await h.db.withTenant(other, async (sql) => (await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM graph.kg_nodes WHERE graph_id = $1`, [mine.graph_id])).rows[0]!.n);
    expect(seen).toBe('0');
  });

  it('deletes a graph for good: its nodes, facts, jobs and kept upload bytes; 404 to another tenant, 403 to a read-only key', async () => {
    const g = await createGraph('Doomed');
    const done = await upload(g.graph_id, { name: 'doomed.csv', bytes: 'name,company\nAda Brook,Acme\nBob Stone,Initech\n' });
    expect((await settled(done.body.jobId)).status).toBe('completed');
    // An upload still waiting for its job keeps its bytes: the deletion takes them too. (Written here without its
    // message, so no worker runs it first.)
    const waitingKey = `graph-uploads/${g.graph_id}/waiting-${run}.csv`;
    await new PostgresBlobStore(h.db).put(tenant, waitingKey, Buffer.from('name,company\nCy Reed,Initech\n'), 'text/csv');
    await h.db.withTenant(tenant, (sql) => sql.query(`INSERT INTO graph.graph_jobs (tenant_id, job_id, graph_id, kind, params) VALUES ($1, $2, $3, 'upload', $4::jsonb)`, [tenant, `gj_waiting_${run}`, g.graph_id, JSON.stringify({ blob_key: waitingKey, filename: 'waiting.csv' })]));
    const blobCount = async () => (await rows<{ n: number }>(tenant, `SELECT count(*)::int AS n FROM runtime.blobs WHERE tenant_id = $1 AND key = $2`, [tenant, waitingKey]))[0]!.n;
    expect(await blobCount()).toBe(1);
    expect((await nodesOf(g.graph_id)).length).toBeGreaterThan(0);

    expect((await call('DELETE', `/memory/departments/${g.graph_id}`, undefined, readOnly())).status).toBe(403);
    expect((await call('DELETE', `/memory/departments/${g.graph_id}`, undefined, who(other))).status).toBe(404);
    const deleted = await call('DELETE', `/memory/departments/${g.graph_id}`);
    expect(deleted.status).toBe(204);
    expect((await call('GET', `/memory/departments/${g.graph_id}`)).status).toBe(404);
    expect((await call('GET', `/memory/jobs/${done.body.jobId}`)).status).toBe(404);
    expect((await call('POST', '/memory/chat', { listId: g.graph_id, question: 'Where does Ada Brook work?' })).status).toBe(404);
    expect(await nodesOf(g.graph_id)).toEqual([]);
    expect(await blobCount()).toBe(0);
    expect(((await call('GET', '/memory/departments')).body.departments as Array<{ graph_id: string }>).map((d) => d.graph_id)).not.toContain(g.graph_id);
    expect((await call('DELETE', `/memory/departments/${g.graph_id}`)).status).toBe(404);
  });

  it('holds at most 1,000 graphs of a tenant: one more is 409 with the way out, and a deletion makes room', async () => {
    const t = `t_kg_many_${run}`;
    const as = who(t, `mem_kg_many_${run}`);
    await h.db.withTenant(t, (sql) => sql.query(`INSERT INTO graph.knowledge_graphs (tenant_id, graph_id, name) SELECT $1, 'bulk-' || i, 'Bulk ' || i FROM generate_series(1, 1000) AS i`, [t]));
    const over = await call('POST', '/memory/departments/create', { name: 'One more' }, as);
    expect([over.status, over.body]).toEqual([409, { detail: expect.stringMatching(/^the tenant has 1000 graphs, the most it may have: delete one first/) }]);
    expect((await call('POST', '/memory/ingest/connectors', { list_id: 'one-more', source_types: null, graph_name: 'One more' }, as)).status).toBe(409);
    expect((await call('GET', '/memory/departments', undefined, as)).body.departments).toHaveLength(1000);
    expect((await call('DELETE', '/memory/departments/bulk-7', undefined, as)).status).toBe(204);
    expect((await call('POST', '/memory/departments/create', { name: 'One more' }, as)).status).toBe(200);
  });

  it('answers 429 with Retry-After while a graph has 20 jobs queued or running, and takes jobs again once they ran', async () => {
    const g = await createGraph('Busy');
    const body = { listId: g.graph_id, records: [], columns: [{ id: 'name', header: 'Company', type: 'fixed' }] };
    await h.graph.worker.stop();
    try {
      for (let i = 0; i < 20; i += 1) expect((await call('POST', '/memory/generate', body)).status).toBe(200);
      const busy = await bearer('POST', '/memory/generate', body);
      expect(busy.status).toBe(429);
      expect(busy.body.detail).toMatch(/20 jobs queued or running/);
      expect(busy.headers.get('retry-after')).toBe('5');
      expect((await upload(g.graph_id, { name: 'a.csv', bytes: 'Company\nAcme\n' })).status).toBe(429);
    } finally {
      await h.graph.worker.start();
    }
    await eventually(async () => ((await call('GET', `/memory/departments/${g.graph_id}`)).body.status === 'ready' ? true : undefined), 90_000, 'the queued jobs ran');
    expect((await call('POST', '/memory/generate', body)).status).toBe(200);
  });
});
