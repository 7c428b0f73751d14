import { OpenAiLanguageModel } from '@lore/ai';
import { upsertDirectoryRecords } from '@lore/agents';
import { companyKey, generateAgentsWorld, matchingCompanies, matchingPeople, personKey, serveAgentsWorld, worldDirectoryRecords, type ServedAgentsWorld } from '../support/agents-world';
import type { TenantFixture } from '../gateway/harness';
import { LoopbackModel } from '../support/loopback-model';
import { startAgentsStack, type AgentsStack, auth, eventually } from './harness';

jest.setTimeout(240_000);

type Json = Record<string, any>;


describe('agents: a worker killed mid-run', () => {
  let s: AgentsStack;
  let a: TenantFixture;
  const world = generateAgentsWorld(3, { companies: 120 });

  beforeAll(async () => {
    // The stack's own worker stays stopped while the child runs: one worker at a time, as in a cluster.
    s = await startAgentsStack({ worker: { start: false, settings: { heartbeatMs: 200, leaseMs: 2_000, batchRows: 1 }, sweepIntervalMs: 300 } });
    a = await s.tenant();
    await upsertDirectoryRecords(s.db, a.tenantId, worldDirectoryRecords(world).map((r) => ({ kind: r.kind, data: r.data, source: r.source })));
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  it('resumes where the dead worker left it, with no duplicate row: the list ends with every matching company once', async () => {
    const truth = matchingCompanies(world, { employeesMin: 11 }).map(companyKey);
    expect(truth.length).toBeGreaterThan(50);
    const start = await s.call('POST', '/company-search/start', auth(a), { prompt: `Find ${truth.length} companies with more than 10 employees` });
    expect(start.status).toBe(200);
    const thread = start.json.thread_id as string;

    const worker = s.spawnWorker({ LORE_AGENTS_WORKFLOW_BATCH_ROWS: '1' });
    const child = worker.process;

    const enriched = async () =>
      Number((await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM agents.workflow_events WHERE thread_id = $1 AND type = 'rows_enriched'`, [thread]))).rows[0]!.n);
    // Killed once some rows are enriched, well before the last.
    await eventually('the child to enrich some rows', async () => (worker.assertRunning(), (await enriched()) >= 5), 90_000, 20);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const mid = await s.call('GET', `/company-search/status/${thread}`, auth(a));
    expect(mid.json).toMatchObject({ status: 'processing', current_step: 'enrichment' });
    expect(mid.json.processed_companies.length).toBeLessThan(truth.length);
    const claim = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ claimed_by: string | null }>(`SELECT claimed_by FROM agents.workflows WHERE thread_id = $1`, [thread]));
    expect(claim.rows[0]!.claimed_by).toMatch(/:\d+:/);

    // Another worker (the stack's): the sweep finds the expired claim and sends the workflow to the workers again.
    await s.worker!.start();
    const done = await eventually('the resumed run to complete', async () => {
      const r = await s.call('GET', `/company-search/status/${thread}`, auth(a));
      return r.json.status === 'completed' ? (r.json as Json) : null;
    }, 120_000, 200);
    const keys: string[] = done.all_companies.map((r: Json) => r.entity_key);
    expect(keys).toHaveLength(truth.length);
    expect(new Set(keys)).toEqual(new Set(truth));
    const rows = await s.db.withTenant(a.tenantId, (sql) =>
      sql.query<{ n: number; keys: number; min: number; max: number }>(
        `SELECT count(*)::int AS n, count(DISTINCT entity_key)::int AS keys, min(position) AS min, max(position) AS max FROM agents.list_rows r JOIN agents.workflows w ON w.list_id = r.list_id WHERE w.thread_id = $1`,
        [thread],
      ),
    );
    expect(rows.rows[0]).toEqual({ n: truth.length, keys: truth.length, min: 1, max: truth.length });
    for (const row of done.table_structure.rows) for (const cell of Object.values(row.cells) as Json[]) expect(cell.status).not.toBe('pending');
    const types = (await s.db.withTenant(a.tenantId, (sql) => sql.query<{ type: string }>(`SELECT type FROM agents.workflow_events WHERE thread_id = $1 ORDER BY seq`, [thread]))).rows.map((r) => r.type);
    expect(types.filter((t) => t === 'criteria_extracted')).toHaveLength(1);
    expect(types.filter((t) => t === 'completed')).toHaveLength(1);
    expect(await s.metrics.metrics()).toMatch(/lore_agents_workflows_resumed_total\{[^}]*\} [1-9]/);
  });
});

describe('agents: lists from the web, and budgets', () => {
  let s: AgentsStack;
  let served: ServedAgentsWorld;
  let a: TenantFixture;
  const world = generateAgentsWorld(1);

  beforeAll(async () => {
    served = await serveAgentsWorld(world);
    s = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } },
      worker: { searxngUrl: served.search.url, settings: { heartbeatMs: 200, stopPollMs: 100, budgets: { fetches: 200, wallMs: 120_000, modelTokens: 50_000 } } },
    });
    a = await s.tenant();
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await served?.close();
  });

  it('builds a company list from search results and their pages when the directory holds nothing; each cell names its page', async () => {
    const truth = matchingCompanies(world, { industry: 'Fintech', city: 'Berlin' }).map(companyKey);
    const start = await s.call('POST', '/company-search/start', auth(a), { prompt: 'Find 3 fintech companies in Berlin' });
    const thread = start.json.thread_id as string;
    const snap = await eventually('the web run', async () => {
      const r = await s.call('GET', `/company-search/status/${thread}`, auth(a));
      return ['completed', 'error'].includes(r.json.status) ? (r.json as Json) : null;
    });
    expect(snap).toMatchObject({ status: 'completed', total_target: 3 });
    expect(snap.table_structure.sources).toEqual(['directory', 'web']);
    expect(snap.table_structure.notes.join(' ')).not.toMatch(/no web search provider/);
    const hosts = snap.all_companies.map((r: Json) => String(r.entity_key).replace(/:\d+$/, ''));
    expect(hosts.length).toBeGreaterThan(0);
    for (const h of hosts) expect(truth).toContain(h);
    for (const row of snap.table_structure.rows) {
      expect(row.cells.name).toMatchObject({ status: 'completed', metadata: { source: 'web', source_url: expect.stringMatching(/^http:\/\/[a-z0-9-]+\.localhost:\d+\//) } });
      expect(row.metadata.source.source_url).toBe(row.cells.name.metadata.source_url);
    }
    expect(served.search.requests.length).toBeGreaterThan(0);
  });

  it('builds a people list from profile pages, judging each person with their employer\'s site', async () => {
    const truth = matchingPeople(world, { title: 'Chief Executive Officer', company: { industry: 'Fintech', city: 'Berlin' } }).map((p) => personKey(p));
    expect(truth.length).toBeGreaterThan(2);
    const start = await s.call('POST', '/people-search/start', auth(a), { prompt: 'Find 2 CEOs of fintech companies in Berlin' });
    const thread = start.json.thread_id as string;
    const snap = await eventually('the web run', async () => {
      const r = await s.call('GET', `/people-search/status/${thread}`, auth(a));
      return ['completed', 'error'].includes(r.json.status) ? (r.json as Json) : null;
    });
    expect(snap).toMatchObject({ status: 'completed', total_target: 2 });
    const keys: string[] = snap.all_companies.map((r: Json) => String(r.entity_key).replace(/:\d+$/, ''));
    expect(keys).toHaveLength(2);
    for (const k of keys) expect(truth).toContain(k);
    for (const row of snap.table_structure.rows) {
      expect(row.cells.title).toMatchObject({ status: 'completed', value: 'Chief Executive Officer', metadata: { source: 'web', source_url: expect.stringMatching(/\/team\/[a-z0-9-]+\.html$/) } });
    }
  });

  it('ends a run cleanly when its fetch budget is spent, saying so', async () => {
    await s.worker!.stop();
    const small = await startAgentsStack({
      service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } },
      worker: { searxngUrl: served.search.url, settings: { budgets: { fetches: 3, wallMs: 120_000, modelTokens: 50_000 } } },
    });
    try {
      const t = await small.tenant();
      const start = await small.call('POST', '/company-search/start', auth(t), { prompt: 'Find 20 fintech companies in Berlin' });
      const thread = start.json.thread_id as string;
      const snap = await eventually('the budget to end the run', async () => {
        const r = await small.call('GET', `/company-search/status/${thread}`, auth(t));
        return ['completed', 'error'].includes(r.json.status) ? (r.json as Json) : null;
      });
      expect(snap).toMatchObject({ status: 'completed', current_step: 'completed', error_message: '' });
      expect(snap.table_structure.current_count).toBeLessThan(20);
      expect(snap.table_structure.notes.join(' ')).toMatch(/^.*budget spent: fetches \(\d+ of 3\); the list has \d+ of 20 rows/);
      const types = (await small.db.withTenant(t.tenantId, (sql) => sql.query<{ type: string }>(`SELECT type FROM agents.workflow_events WHERE thread_id = $1 ORDER BY seq`, [thread]))).rows.map((r) => r.type);
      expect(types[types.length - 1]).toBe('budget_spent');
      expect(await small.metrics.metrics()).toMatch(/lore_agents_workflows_total\{kind="company_search",status="budget"[^}]*\} 1/);
    } finally {
      await small.close();
      await s.worker!.start();
    }
  });

  it('takes the criteria from a configured model, charges its tokens, and ends the run when they are spent', async () => {
    const model = await new LoopbackModel().start();
    const small = await startAgentsStack({
      service: { languageModel: new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 5_000, retries: 0 }) },
      worker: { settings: { budgets: { fetches: 200, wallMs: 120_000, modelTokens: 1_000 } } },
    });
    try {
      model.turns = [
        {
          content: JSON.stringify({
            title: 'Berlin payments',
            description: 'Payment companies in Berlin.',
            count: 5,
            criteria: [{ name: 'Industry', value: 'Fintech', column_name: 'industry', columnType: 'badge', description: 'Works in payments.', type: 'hard_filter' }],
          }),
        },
      ];
      const t = await small.tenant();
      const start = await small.call('POST', '/company-search/start', auth(t), { prompt: 'Payment firms in Berlin please' });
      const thread = start.json.thread_id as string;
      const snap = await eventually('the run to end', async () => {
        const r = await small.call('GET', `/company-search/status/${thread}`, auth(t));
        return ['completed', 'error'].includes(r.json.status) ? (r.json as Json) : null;
      });
      expect(model.bodies).toHaveLength(1);
      expect(snap).toMatchObject({ status: 'completed', total_target: 5, goal: 'Payment companies in Berlin.' });
      expect(snap.criteria).toEqual([expect.objectContaining({ name: 'Industry', value: 'Fintech', column_name: 'industry', description: 'Works in payments.' })]);
      expect(snap.table_structure.notes.join(' ')).toMatch(/budget spent: model tokens \(\d+ of 1000\); the list has 0 of 5 rows/);
    } finally {
      await small.close();
      await model.stop();
    }
  });

  it('ends a run when its wall time is spent', async () => {
    const small = await startAgentsStack({ worker: { settings: { budgets: { fetches: 200, wallMs: 1, modelTokens: 50_000 } } } });
    try {
      const t = await small.tenant();
      const start = await small.call('POST', '/people-search/start', auth(t), { prompt: 'Find CTOs in Paris' });
      const thread = start.json.thread_id as string;
      const snap = await eventually('the run to end', async () => {
        const r = await small.call('GET', `/people-search/status/${thread}`, auth(t));
        return ['completed', 'error'].includes(r.json.status) ? (r.json as Json) : null;
      });
      expect(snap).toMatchObject({ status: 'completed', current_step: 'completed', error_message: '' });
      expect(snap.table_structure.notes.join(' ')).toMatch(/budget spent: wall time/);
      // A continue starts a new run with its own budget (spent again here, at once).
      const more = await small.call('POST', '/people-search/continue', auth(t), { thread_id: thread, total_target: 30 });
      expect(more.json).toEqual({ success: true, thread_id: thread, status: 'continuing' });
      const again = await eventually('the continued run to end', async () => {
        const r = await small.call('GET', `/people-search/status/${thread}`, auth(t));
        return r.json.status === 'completed' && r.json.total_target === 30 ? (r.json as Json) : null;
      });
      expect(again.table_structure.notes.filter((n: string) => n.startsWith('budget spent'))).toHaveLength(1);
    } finally {
      await small.close();
    }
  });
});
