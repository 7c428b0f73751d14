import { Writable } from 'node:stream';
import { createLogger } from '@lore/runtime';
import type { WebPageRead } from '../list-building';
import type { PageFetch, SessionContext, SessionProgress } from './agent';
import { deepSearchAgent, webResearchAgent } from './web-research';

/** A session context on a web whose pages are `pages` (any other page refused as the SSRF guard refuses one). */
function contextOn(prompt: string, pages: Record<string, WebPageRead>, results: readonly string[]) {
  const progress: SessionProgress[] = [];
  const rows: string[] = [];
  const ctx: SessionContext = {
    kind: 'web_research',
    tenantId: 't-1',
    threadId: 'th-1',
    listId: 'l-1',
    prompt,
    options: { llm_model: null, model: null, live_url: false, proxy: false, proxy_country_code: null, workspace_id: null, uploads: [] },
    signal: new AbortController().signal,
    budgets: { fetches: 1000, wallMs: 60_000, modelTokens: 0 },
    logger: createLogger({ level: 'error', service: 'agents-test', destination: new Writable({ write: (_c, _e, done) => done() }) }),
    fetcher: {
      fetchPage: async (url): Promise<PageFetch> => {
        const page = pages[url];
        return page ? { page } : { page: null, reason: `Lore does not read this address: ${url}` };
      },
      search: async (_query, page = 1) => (page === 1 ? results.map((url) => ({ url, title: '', snippet: '' })) : []),
    },
    emit: async (p) => void progress.push(p),
    ask: async () => '',
    writeRows: async (written) => {
      const fresh = written.filter((r) => !rows.includes(r.entity_key));
      rows.push(...fresh.map((r) => r.entity_key));
      return fresh.length;
    },
    rowsInList: async () => rows.length,
    spendTokens: () => undefined,
    state: {},
    saveState: async () => undefined,
  };
  return { ctx, progress, rows };
}

describe('web research and deep search', () => {
  const fintech: WebPageRead = { url: 'http://pay.example/', title: 'Pay', text: 'Pay is a fintech company in Berlin.', facts: { name: 'Pay', industry: 'Fintech', location: { city: 'Berlin' } }, person: null };

  it('count only the pages they read: refused and failed reads are no "pages read", and the summary says how many could not be read', async () => {
    const refused = ['http://10.0.0.1/', 'http://169.254.169.254/', 'http://localhost/'];
    const { ctx, progress } = contextOn('fintech companies in Berlin', {}, refused);
    expect(await webResearchAgent.run(ctx)).toEqual({ summary: '0 companies found on 0 pages read (3 could not be read)' });
    const visited = progress.filter((p) => p.stage === 'visited');
    expect(visited.map((p) => [p.data?.read, p.data?.pages])).toEqual([[false, 0], [false, 0], [false, 0]]);

    // One page read among refused ones: it alone counts; deep search the same.
    const mixed = contextOn('fintech companies in Berlin', { [fintech.url]: fintech }, [refused[0]!, fintech.url, refused[1]!]);
    mixed.ctx = { ...mixed.ctx, kind: 'deep_search' };
    expect(await deepSearchAgent.run(mixed.ctx)).toEqual({ summary: '1 companies found on 1 pages read (2 could not be read)' });
    expect(mixed.progress.filter((p) => p.stage === 'visited').map((p) => p.data?.pages)).toEqual([0, 1, 1]);

    // Every page read: the summary as before.
    const read = contextOn('fintech companies in Berlin', { [fintech.url]: fintech }, [fintech.url]);
    expect(await webResearchAgent.run(read.ctx)).toEqual({ summary: '1 companies found on 1 pages read' });
  });
});
