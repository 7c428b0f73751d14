import { useEmbedded } from '../support/embedded';
import { generateAgentsWorld, serveAgentsWorld, type ServedAgentsWorld } from '../support/agents-world';
import { openSession, refusal } from './session-socket';

jest.setTimeout(180_000);

/**
 * A session socket in embedded mode (`npm start`): the gateway in the process upgrades the socket and splices it to
 * the agents listener on its unix socket; the in-process worker runs the crawler on the in-memory bus.
 */
describe('an agentic crawler session in embedded mode', () => {
  const embedded = useEmbedded('agents-sessions-embedded', { LORE_AGENTS_ALLOW_LOOPBACK: 'true' });
  const world = generateAgentsWorld(5, { companies: 10 });
  let served: ServedAgentsWorld;
  beforeAll(async () => {
    served = await serveAgentsWorld(world);
  });
  afterAll(async () => {
    await served?.close();
  });

  it('runs once the socket connects and sends the rows it writes, with provenance; a socket without the key is refused', async () => {
    const c = world.companies.find((x) => !x.teamDisallowed)!;
    const people = world.people.filter((p) => p.companyId === c.id);
    const start = await embedded.call('POST', '/agentic-crawler/start', { prompt: `Find the people at ${served.companyUrl(c)}` });
    expect(start.status).toBe(200);
    expect(start.json.status).toBe('ready');
    const url = start.json.websocket_url as string;
    expect(new URL(url).host).toBe(new URL(embedded.lore.url).host);
    expect((await refusal(url)).status).toBe(401);

    const client = await openSession(url.replace('<your-api-key>', encodeURIComponent(embedded.lore.credentials.api_key)));
    const done = await client.waitFor('done', (m) => m.type === 'done', 90_000);
    expect(done).toMatchObject({ status: 'completed', thread_id: start.json.thread_id });
    const rows = client.messages.filter((m) => m.type === 'row');
    expect(rows.map((m) => m.row.fields.name)).toEqual(expect.arrayContaining([c.name, ...people.map((p) => p.name)]));
    for (const m of rows) expect(m.row.provenance.source_url).toContain(`${c.slug}.localhost`);
    const cursors = client.messages.map((m) => m.cursor);
    expect(cursors).toEqual(cursors.map((_, i) => i + 1));
  });
});
