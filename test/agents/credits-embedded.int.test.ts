import { listen, type StartedServer } from '@lore/runtime';
import { http } from '../support/http';
import { useEmbedded } from '../support/embedded';
import { generateAgentsWorld } from '../support/agents-world';
import { ended, pollUntil, seedDirectory, until, type Json } from './embedded-client';

jest.setTimeout(180_000);

/**
 * Credits in embedded mode (`npm start`): the gateway's credits consumer runs in the process on the in-memory bus, so
 * a workflow's charges come off the dev tenant's balance there too, and the process's gateway refuses the next start
 * with 402 at once. The admin API is served here on a free loopback port of the test's own. The prices are the
 * agents worker's variables, which embedded mode reads too (it charged the built-in prices before 2026-11-30).
 */
describe('credits in embedded mode', () => {
  const embedded = useEmbedded('credits-embedded', {
    LORE_ADMIN_PORT: '0',
    LORE_AGENTS_CREDITS_PER_ROW: '2',
    LORE_AGENTS_CREDITS_PER_FETCH: '3',
    // Limits the agents API and core read on a cluster, checked on the composed parts below.
    LORE_AGENTS_CSV_MAX_ROWS: '1234',
    LORE_AGENTS_WORKFLOW_MAX_PER_SERVICE: '4',
    LORE_AGENTS_LIVE_URL_TTL_S: '120',
    LORE_CORE_PROJECT_MAX_FILES: '7',
    LORE_CORE_CONNECTOR_FILES_PER_UPLOAD: '9',
  });
  const world = generateAgentsWorld(1);
  let admin: StartedServer;
  beforeAll(async () => {
    await seedDirectory(embedded, world);
    admin = await listen(embedded.lore.parts.gateway.adminApp, 0, '127.0.0.1');
  });
  afterAll(async () => {
    await admin?.close();
  });
  const billing = (method: string, body?: unknown) =>
    http(admin.url, method, `/internal/v1/tenants/${embedded.lore.credentials.tenant_id}/billing`, { headers: { authorization: `Bearer ${embedded.lore.credentials.admin_token}` }, body });

  it('takes a workflow\'s credits off the balance, and answers 402 once it is used up', async () => {
    expect((await billing('PUT', { credit_balance: 1_000 })).json).toMatchObject({ credit_balance: 1_000 });
    const start = await embedded.call('POST', '/company-search/start', { prompt: 'Find fintech companies in Berlin' });
    expect(start.status).toBe(200);
    const snap = await pollUntil(embedded, `/company-search/status/${start.json.thread_id}`, ended);
    expect(snap.status).toBe('completed');
    // No web search here: the price of a row (2) for each row, and of a fetch (3) for the run's retrieval of the
    // tenant's knowledge.
    expect(snap.table_structure.sources).toEqual(['directory', 'knowledge']);
    expect(snap.credits_used).toBe(2 * snap.table_structure.current_count + 3);
    expect(snap.credits_used).toBeGreaterThan(0);
    await until('the charge to reach the balance', async () => (await billing('GET')).json.credit_balance === 1_000 - snap.credits_used, 30_000);

    expect((await billing('PUT', { credit_balance: 0 })).status).toBe(200);
    const refused = await embedded.call('POST', '/api/workflow/people/start', { prompt: 'Find chief technology officers', serviceId: 'crm-1' });
    expect(refused.status).toBe(402);
    expect(refused.json.error).toMatchObject({ code: 'INSUFFICIENT_CREDITS', details: { reason: 'credit_balance', balance: 0 } });
    const json: Json = (await billing('GET')).json;
    expect(json.credit_balance).toBe(0);
  });

  it('gives the agents API and core the limits set, as their cluster processes read them', () => {
    const { agents, core } = embedded.lore.parts;
    expect(agents.agents.csvImport).toMatchObject({ maxRows: 1234 });
    expect(agents.agents.genericWorkflows).toEqual({ maxRunningPerService: 4 });
    expect(agents.agents.liveTokens.ttlSeconds).toBe(120);
    expect(core.core.projectFiles.settings.limits).toMatchObject({ maxFilesPerProject: 7 });
    expect(core.core.connectorFiles.limits).toMatchObject({ maxFilesPerUpload: 9 });
  });
});
