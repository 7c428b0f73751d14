import { listen, type StartedServer } from '@lore/runtime';
import { http } from '../support/http';
import { useEmbedded } from '../support/embedded';
import { generateAgentsWorld } from '../support/agents-world';
import { ended, pollUntil, seedDirectory, until, type Json } from './embedded-client';

jest.setTimeout(180_000);

/**
 * Credits in embedded mode (`npm start`): the gateway's credits consumer runs in the process on the in-memory bus, so
 * a workflow's charges come off the dev tenant's balance there too, and the process's gateway refuses the next start
 * with 402 at once. The admin API is served here on a free loopback port of the test's own.
 */
describe('credits in embedded mode', () => {
  const embedded = useEmbedded('credits-embedded', { LORE_ADMIN_PORT: '0' });
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
    // No web search here: a credit a row, and one for the run's retrieval of the tenant's knowledge (a fetch).
    expect(snap.table_structure.sources).toEqual(['directory', 'knowledge']);
    expect(snap.credits_used).toBe(snap.table_structure.current_count + 1);
    expect(snap.credits_used).toBeGreaterThan(0);
    await until('the charge to reach the balance', async () => (await billing('GET')).json.credit_balance === 1_000 - snap.credits_used, 30_000);

    expect((await billing('PUT', { credit_balance: 0 })).status).toBe(200);
    const refused = await embedded.call('POST', '/api/workflow/people/start', { prompt: 'Find chief technology officers', serviceId: 'crm-1' });
    expect(refused.status).toBe(402);
    expect(refused.json.error).toMatchObject({ code: 'INSUFFICIENT_CREDITS', details: { reason: 'credit_balance', balance: 0 } });
    const json: Json = (await billing('GET')).json;
    expect(json.credit_balance).toBe(0);
  });
});
