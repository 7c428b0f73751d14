import { upsertDirectoryRecords } from '@lore/agents';
import { useEmbedded } from '../support/embedded';
import { companyKey, generateAgentsWorld, matchingCompanies, worldDirectoryRecords } from '../support/agents-world';

jest.setTimeout(180_000);

/**
 * Embedded mode (`npm start`): the agents worker runs in the process on the in-memory bus, PGlite holds the
 * workflows, the progress streams are in memory, and the one outbox relay publishes the workflows' messages.
 */
describe('a company search in embedded mode', () => {
  const embedded = useEmbedded('agents-embedded');
  const call = embedded.call;

  it('runs to completed with the directory\'s matching companies, and reports its progress stream', async () => {
    const world = generateAgentsWorld(1, { companies: 80 });
    await upsertDirectoryRecords(embedded.lore.parts.db, embedded.lore.credentials.tenant_id, worldDirectoryRecords(world).map((r) => ({ kind: r.kind, data: r.data, source: r.source })));
    const truth = matchingCompanies(world, { industry: 'Fintech', city: 'Berlin' }).map(companyKey);
    expect(truth.length).toBeGreaterThan(0);
    const start = await call('POST', '/company-search/start', { prompt: 'Find fintech companies in Berlin' });
    expect(start.status).toBe(200);
    const thread = start.json.thread_id as string;
    let snap: any = null;
    for (let i = 0; i < 600 && snap?.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      snap = (await call('GET', `/company-search/status/${thread}`)).json;
      expect(snap.status).not.toBe('error');
    }
    expect(snap).toMatchObject({ status: 'completed', current_step: 'completed' });
    expect(new Set(snap.all_companies.map((r: any) => r.entity_key))).toEqual(new Set(truth));
    const stream = await call('GET', `/api/stream/stream-status/workflow:${thread}`);
    expect(stream.status).toBe(200);
    expect(stream.json).toMatchObject({ stream_key: `workflow:${thread}`, active: false });
    expect(stream.json.length).toBeGreaterThanOrEqual(4);
    expect((await call('GET', '/api/stream/active-streams')).json).toContain(`workflow:${thread}`);
  });
});
