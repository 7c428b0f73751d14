import { BRIEF_SECTIONS, REPORT_SECTIONS, hasSections, reportClaims } from '../../services/agents/src/domain/research';
import { generateAgentsWorld, serveAgentsWorld, type ServedAgentsWorld } from '../support/agents-world';
import { useEmbedded } from '../support/embedded';

jest.setTimeout(180_000);

/**
 * Deep research in embedded mode (`npm start`): PGlite, the in-process bus and progress streams, the embedded
 * (extractive) model — so the brief and the report are Lore's own — and the web through a SearXNG endpoint over the
 * test world's sites (LORE_AGENTS_SEARXNG_URL, with loopback reads allowed).
 */
describe('deep research in embedded mode', () => {
  let served: ServedAgentsWorld | undefined;
  const env: Record<string, string> = { LORE_AGENTS_ALLOW_LOOPBACK: 'true' };
  // Registered before the embedded process's own hook, so the search endpoint's address is in its environment.
  beforeAll(async () => {
    served = await serveAgentsWorld(generateAgentsWorld(1));
    env.LORE_AGENTS_SEARXNG_URL = served.search.url;
  });
  afterAll(async () => {
    await served?.close();
  });
  const embedded = useEmbedded('research-embedded', env);

  it('researches the world\'s pages to a complete report whose every claim cites a page it read', async () => {
    const start = await embedded.call('POST', '/research/start', { query: 'fintech companies in Berlin', serviceId: 'embedded', max_researcher_iterations: 2 });
    expect(start.status).toBe(200);
    const thread = start.json.thread_id as string;
    let status: any = null;
    for (let i = 0; i < 600 && !['completed', 'error', 'stopped'].includes(status?.status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await embedded.call('GET', `/research/status/${thread}`)).json;
    }
    expect(status).toMatchObject({ status: 'completed', partial: false, message: expect.stringMatching(/^research completed: \d+ pages read, \d+ cited$/) });
    expect(hasSections(status.research_brief, BRIEF_SECTIONS)).toBe(true);
    expect(hasSections(status.final_report, REPORT_SECTIONS)).toBe(true);
    expect(status.sources.length).toBeGreaterThan(2);
    const read = new Set(status.sources.map((x: any) => x.n));
    const claims = reportClaims(status.final_report);
    expect(claims.length).toBeGreaterThan(2);
    for (const c of claims) {
      expect(c.markers.length).toBeGreaterThan(0);
      for (const n of c.markers) expect(read.has(n)).toBe(true);
    }
    for (const x of status.sources) expect(served!.web.requests.some((r) => String(x.url).includes(r.host))).toBe(true);
    const res = await fetch(`${embedded.lore.url}/research/stream/${thread}`, { headers: { 'x-api-key': embedded.lore.credentials.api_key, 'last-event-id': '1' } });
    const text = await res.text();
    const frames = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!));
    expect(frames[0]).toMatchObject({ seq: 2 });
    expect(frames[frames.length - 1]).toMatchObject({ event: 'complete', final_report: status.final_report });
  });
});
