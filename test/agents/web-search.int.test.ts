import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isRetryableSearchError, SearxngWebSearch, WebSearchError, webSearchFrom } from '@lore/agents';
import { generateAgentsWorld, matchingCompanies, serveAgentsWorld, type ServedAgentsWorld } from '../support/agents-world';
import { LoopbackSearch } from '../support/loopback-search';

/**
 * The SearXNG client (services/agents/src/sources/web-search.ts) against the test world's SearXNG-format endpoint
 * (test/support/loopback-search.ts): the request it sends, the results it returns, and every failure as the typed
 * error the workflow engine counts against its budget (docs/agents.md, "Web search"). No gateway is involved.
 */

const world = generateAgentsWorld(1);
let served: ServedAgentsWorld;
let searx: SearxngWebSearch;

beforeAll(async () => {
  served = await serveAgentsWorld(world);
  searx = new SearxngWebSearch({ baseUrl: served.search.url, timeoutMs: 5_000 });
});
afterAll(async () => {
  searx?.close();
  await served?.close();
});

async function failure(promise: Promise<unknown>): Promise<WebSearchError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(WebSearchError);
    return err as WebSearchError;
  }
  throw new Error('the search did not fail');
}

/** A server on loopback that answers `handler` — for what a SearXNG instance may do but the loopback one does not. */
async function rawServer(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

describe('SearxngWebSearch against a SearXNG JSON endpoint', () => {
  it('sends GET /search with q, format=json and pageno, and returns the results as url, title, snippet', async () => {
    const before = served.search.requests.length;
    const webBefore = served.web.requests.length;
    const { results } = await searx.search('fintech Berlin');
    const sent = served.search.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ method: 'GET', status: 200, params: { q: 'fintech Berlin', format: 'json', pageno: '1' } });
    expect(sent[0]!.path.startsWith('/search?')).toBe(true);
    expect(sent[0]!.headers.accept).toBe('application/json');

    const expected = served.search.answer({ q: 'fintech Berlin', format: 'json', pageno: '1' }).results;
    expect(results.map((r) => r.url)).toEqual(expected.map((r) => r.url));
    expect(results.length).toBeGreaterThan(0);
    for (const r of results) {
      expect(Object.keys(r).sort()).toEqual(expect.arrayContaining(['snippet', 'title', 'url']));
      expect(r.url).toMatch(/^http:\/\//);
      expect(r.title.length).toBeGreaterThan(0);
      expect(r.snippet.length).toBeLessThanOrEqual(1000);
    }
    expect(results[0]!.snippet).toBe(expected[0]!.content);
    // Pages without a publication date have no publishedAt.
    expect(results.filter((r, i) => expected[i]!.publishedDate === null && 'publishedAt' in r)).toEqual([]);
    // The fintech companies of Berlin are what the world's search finds for those words.
    const berlinFintech = new Set(matchingCompanies(world, { industry: 'Fintech', city: 'Berlin' }).map((c) => c.domain));
    expect(results.some((r) => berlinFintech.has(new URL(r.url).hostname))).toBe(true);
    // Result URLs are returned, never fetched here.
    expect(served.web.requests.length).toBe(webBefore);
  });

  it('pages with pageno, keeps at most limit results, and passes the language', async () => {
    const all = served.search.answer({ q: 'fintech', format: 'json', pageno: '1' }).results;
    const second = served.search.answer({ q: 'fintech', format: 'json', pageno: '2' }).results;
    expect(second.length).toBeGreaterThan(0);
    const page2 = await searx.search('fintech', { page: 2 });
    expect(page2.results.map((r) => r.url)).toEqual(second.map((r) => r.url));
    expect(served.search.requests.at(-1)!.params.pageno).toBe('2');
    const three = await searx.search('fintech', { limit: 3 });
    expect(three.results.map((r) => r.url)).toEqual(all.slice(0, 3).map((r) => r.url));
    await searx.search('fintech', { language: 'en' });
    expect(served.search.requests.at(-1)!.params.language).toBe('en');
    // A language no page has gives no results, not an error.
    expect((await searx.search('fintech', { language: 'de' })).results).toEqual([]);
  });

  it('gives publishedAt as ISO 8601 when the engine has a publication date', async () => {
    const post = served.web.pages().find((p) => p.publishedDate !== null && !p.noindex)!;
    expect(post).toBeDefined();
    const { results } = await searx.search(post.title);
    const hit = results.find((r) => r.url === post.url);
    expect(hit?.publishedAt).toBe(new Date(post.publishedDate!).toISOString());
  });

  it('refuses bad input before sending anything', async () => {
    const before = served.search.requests.length;
    expect((await failure(searx.search('   '))).kind).toBe('invalid_query');
    expect((await failure(searx.search('x'.repeat(501)))).kind).toBe('invalid_query');
    expect((await failure(searx.search('fintech', { page: 0 }))).kind).toBe('invalid_query');
    expect((await failure(searx.search('fintech', { page: 51 }))).kind).toBe('invalid_query');
    expect((await failure(searx.search('fintech', { limit: 101 }))).kind).toBe('invalid_query');
    expect((await failure(searx.search('fintech', { language: 'de&format=html' }))).kind).toBe('invalid_query');
    expect(served.search.requests.length).toBe(before);
  });

  it('turns 429 into a retryable rate_limited error with Retry-After, and succeeds again afterwards', async () => {
    served.search.failNext(1, 429, { retryAfterSeconds: 7 });
    const err = await failure(searx.search('fintech Berlin'));
    expect(err).toMatchObject({ kind: 'rate_limited', status: 429, retryAfterMs: 7_000, retryable: true });
    expect(isRetryableSearchError(err)).toBe(true);
    expect((await searx.search('fintech Berlin')).results.length).toBeGreaterThan(0);
  });

  it('turns 503 into a retryable unavailable error', async () => {
    served.search.failNext(1, 503);
    const err = await failure(searx.search('fintech'));
    expect(err).toMatchObject({ kind: 'unavailable', status: 503, retryAfterMs: null, retryable: true });
  });

  it('turns 403 (JSON output disabled on the instance) into a configuration error that is not retried', async () => {
    const noJson = await new LoopbackSearch(served.web, { json: false }).start();
    const client = new SearxngWebSearch({ baseUrl: noJson.url });
    try {
      const err = await failure(client.search('fintech'));
      expect(err).toMatchObject({ kind: 'misconfigured', status: 403, retryable: false });
      expect(err.message).toMatch(/json/i);
      expect(isRetryableSearchError(err)).toBe(false);
    } finally {
      client.close();
      await noJson.close();
    }
  });

  it('calls /search under the configured path, and a wrong path is a configuration error', async () => {
    const prefixed = new SearxngWebSearch({ baseUrl: `${served.search.url}/searxng/` });
    try {
      const err = await failure(prefixed.search('fintech'));
      expect(err).toMatchObject({ kind: 'misconfigured', status: 404 });
      expect(served.search.requests.at(-1)!.path.startsWith('/searxng/search?')).toBe(true);
    } finally {
      prefixed.close();
    }
  });

  it('sends the address\'s user and password as basic authentication, never in the request\'s URL', async () => {
    const url = new URL(served.search.url);
    url.username = 'lore';
    url.password = 'p@ss:word';
    const guarded = new SearxngWebSearch({ baseUrl: url.href });
    try {
      expect((await guarded.search('fintech')).results.length).toBeGreaterThan(0);
      const sent = served.search.requests.at(-1)!;
      expect(sent.headers.authorization).toBe(`Basic ${Buffer.from('lore:p@ss:word').toString('base64')}`);
      expect(sent.path).not.toMatch(/lore|word/);
      // Without a user in the address, no header.
      expect((await searx.search('fintech')).results.length).toBeGreaterThan(0);
      expect(served.search.requests.at(-1)!.headers.authorization).toBeUndefined();
    } finally {
      guarded.close();
    }
  });

  it('turns a stalled instance into a retryable timeout within its deadline', async () => {
    const stalled = await rawServer(() => {
      /* never answers */
    });
    const client = new SearxngWebSearch({ baseUrl: stalled.url, timeoutMs: 300 });
    try {
      const started = Date.now();
      const err = await failure(client.search('fintech'));
      expect(err).toMatchObject({ kind: 'timeout', retryable: true });
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      client.close();
      await stalled.close();
    }
  });

  it('turns an instance that is down into a retryable unavailable error', async () => {
    const gone = await rawServer(() => undefined);
    const url = gone.url;
    await gone.close();
    const client = new SearxngWebSearch({ baseUrl: url });
    try {
      expect(await failure(client.search('fintech'))).toMatchObject({ kind: 'unavailable', retryable: true });
    } finally {
      client.close();
    }
  });

  it('turns an answer that is not its JSON API into bad_response', async () => {
    const html = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>Sign in</title>');
    });
    const wrongShape = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"query":"x"}');
    });
    const a = new SearxngWebSearch({ baseUrl: html.url });
    const b = new SearxngWebSearch({ baseUrl: wrongShape.url });
    try {
      expect(await failure(a.search('fintech'))).toMatchObject({ kind: 'bad_response', retryable: false });
      expect(await failure(b.search('fintech'))).toMatchObject({ kind: 'bad_response', retryable: false });
    } finally {
      a.close();
      b.close();
      await html.close();
      await wrongShape.close();
    }
  });

  it('keeps only safe, unique http(s) results from what the instance returns', async () => {
    const server = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          query: 'x',
          results: [
            { url: 'javascript:alert(1)', title: 'bad', content: '' },
            { url: 'https://a.example/page#top', title: 'A &amp; B <b>bold</b>', content: 'one\u0000two <i>three</i>', publishedDate: '2026-01-02T03:04:05+00:00' },
            { url: 'https://a.example/page', title: 'duplicate', content: '' },
            { url: 'https://user:pw@b.example/', title: 'credentials', content: '' },
            { url: 'not a url', title: 'x', content: '' },
            { title: 'no url' },
            { url: 'http://c.example/', title: null, content: null, publishedDate: 'yesterday' },
          ],
        }),
      );
    });
    const client = new SearxngWebSearch({ baseUrl: server.url });
    try {
      expect((await client.search('x')).results).toEqual([
        { url: 'https://a.example/page', title: 'A & B bold', snippet: 'one two three', publishedAt: '2026-01-02T03:04:05.000Z' },
        { url: 'http://c.example/', title: 'http://c.example/', snippet: '' },
      ]);
    } finally {
      client.close();
      await server.close();
    }
  });

  it('reaches the configured instance by a cluster-internal name, and no other origin even by redirect', async () => {
    const port = new URL(served.search.url).port;
    const lookup = async (host: string) => {
      if (host === 'searxng.search.svc') return [{ address: '127.0.0.1', family: 4 as const }];
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    };
    const cluster = new SearxngWebSearch({ baseUrl: `http://searxng.search.svc:${port}`, lookup });
    const redirecting = await rawServer((_req, res) => {
      res.writeHead(302, { location: `${served.search.url}/search?q=fintech&format=json` });
      res.end();
    });
    const redirected = new SearxngWebSearch({ baseUrl: redirecting.url });
    try {
      expect((await cluster.search('fintech Berlin')).results.length).toBeGreaterThan(0);
      expect(served.search.requests.at(-1)!.headers.host).toBe(`searxng.search.svc:${port}`);
      const before = served.search.requests.length;
      const err = await failure(redirected.search('fintech'));
      expect(err).toMatchObject({ kind: 'misconfigured', retryable: false });
      expect(err.message).toMatch(/only the configured SearXNG address/);
      expect(served.search.requests.length).toBe(before);
    } finally {
      cluster.close();
      redirected.close();
      await redirecting.close();
    }
  });

  it('refuses metadata, link-local and unspecified addresses as the instance, before connecting', async () => {
    for (const baseUrl of ['http://169.254.169.254/', 'http://[::ffff:169.254.169.254]/', 'http://0.0.0.0:8080/']) {
      const client = new SearxngWebSearch({ baseUrl, timeoutMs: 2_000 });
      try {
        const err = await failure(client.search('fintech'));
        expect(err).toMatchObject({ kind: 'misconfigured', retryable: false });
        expect(err.message).toMatch(/refused/);
      } finally {
        client.close();
      }
    }
  });

  it('stops when the caller cancels', async () => {
    const stalled = await rawServer(() => undefined);
    const client = new SearxngWebSearch({ baseUrl: stalled.url, timeoutMs: 10_000 });
    try {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      expect(await failure(client.search('fintech', { signal: controller.signal }))).toMatchObject({ kind: 'aborted', retryable: false });
    } finally {
      client.close();
      await stalled.close();
    }
  });

  it('is built from the configuration only when an address is set', () => {
    expect(webSearchFrom({ searxngUrl: undefined })).toBeNull();
    const made = webSearchFrom({ searxngUrl: served.search.url });
    expect(made?.provider).toBe('searxng');
    made?.close();
  });
});
