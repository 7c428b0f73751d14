import { OutboundHttpClient } from './http-client';
import { RobotsPolicy } from './robots';
import { TargetGuard } from './target-guard';
import { startServer, type TestServer } from './test-servers';

const BOT = 'LoreBot';

const servers: TestServer[] = [];
const clients: OutboundHttpClient[] = [];

/** A site whose robots.txt answer the test chooses; pages answer 200. */
async function site(robots: { status: number; body?: string } | (() => { status: number; body?: string })): Promise<TestServer> {
  const s = await startServer((req, res) => {
    if (req.path !== '/robots.txt') return void res.end('page');
    const answer = typeof robots === 'function' ? robots() : robots;
    res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body ?? '');
  });
  servers.push(s);
  return s;
}

function policy(options: Partial<ConstructorParameters<typeof RobotsPolicy>[0]> = {}): RobotsPolicy {
  const client = new OutboundHttpClient({ guard: new TargetGuard({ allowLoopback: true }), userAgent: `${BOT}/1`, timeoutMs: 2000 });
  clients.push(client);
  return new RobotsPolicy({ client, ...options });
}

const robotsFetches = (s: TestServer) => s.requests.filter((r) => r.path === '/robots.txt').length;

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('RobotsPolicy', () => {
  it('applies the rules of the file to the matching agent, with its crawl-delay, fetching it once per origin', async () => {
    const s = await site({
      status: 200,
      body: ['User-agent: LoreBot', 'Disallow: /private', 'Allow: /private/open', 'Crawl-delay: 2', '', 'User-agent: *', 'Disallow: /'].join('\n'),
    });
    const robots = policy();
    expect(await robots.isAllowed(`${s.url}/public/page`, BOT)).toBe(true);
    expect(await robots.isAllowed(`${s.url}/private/secret`, BOT)).toBe(false);
    expect(await robots.isAllowed(`${s.url}/private/open/x`, BOT)).toBe(true);
    expect(await robots.isAllowed(`${s.url}/public/page`, 'OtherBot')).toBe(false);
    expect(await robots.crawlDelayMs(`${s.url}/`, BOT)).toBe(2000);
    expect(await robots.crawlDelayMs(`${s.url}/`, 'OtherBot')).toBeNull();
    expect(robotsFetches(s)).toBe(1);
    expect(s.requests[0]!.headers['user-agent']).toBe(`${BOT}/1`);
  });

  it("lists the file's Sitemap lines in order, and none when there is no file", async () => {
    const s = await site({ status: 200, body: ['User-agent: *', 'Disallow:', 'Sitemap: https://example.com/a.xml', 'sitemap: https://cdn.example.org/b.xml.gz'].join('\n') });
    expect((await policy().rulesFor(`${s.url}/`))!.sitemaps).toEqual(['https://example.com/a.xml', 'https://cdn.example.org/b.xml.gz']);
    const missing = await site({ status: 404 });
    expect((await policy().rulesFor(`${missing.url}/`))!.sitemaps).toEqual([]);
  });

  it('allows everything when robots.txt answers 4xx', async () => {
    for (const status of [404, 403, 410]) {
      const s = await site({ status, body: 'User-agent: *\nDisallow: /' });
      const robots = policy();
      expect([status, await robots.isAllowed(`${s.url}/anything`, BOT)]).toEqual([status, true]);
      expect((await robots.rulesFor(s.url))!.source).toBe('missing');
    }
  });

  it('disallows everything while robots.txt answers 5xx (or 429), and asks again once the unreachable period is over', async () => {
    let now = 1_000_000;
    let status = 503;
    const s = await site(() => ({ status, body: 'User-agent: *\nDisallow: /private' }));
    const robots = policy({ now: () => now, unreachableTtlMs: 60_000 });
    expect(await robots.isAllowed(`${s.url}/page`, BOT)).toBe(false);
    expect((await robots.rulesFor(s.url))!.source).toBe('unreachable');
    now += 30_000;
    expect(await robots.isAllowed(`${s.url}/page`, BOT)).toBe(false);
    expect(robotsFetches(s)).toBe(1);
    status = 429;
    now += 31_000;
    expect(await robots.isAllowed(`${s.url}/page`, BOT)).toBe(false);
    expect(robotsFetches(s)).toBe(2);
    status = 200;
    now += 61_000;
    expect(await robots.isAllowed(`${s.url}/page`, BOT)).toBe(true);
    expect(await robots.isAllowed(`${s.url}/private`, BOT)).toBe(false);
    expect(robotsFetches(s)).toBe(3);
  });

  it('asks once more when the connection breaks before robots.txt is answered', async () => {
    let broken = 0;
    const s = await startServer((req, res) => {
      if (req.path === '/robots.txt' && broken++ === 0) return void res.socket!.destroy();
      res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private');
    });
    servers.push(s);
    const robots = policy();
    expect([await robots.isAllowed(`${s.url}/page`, BOT), await robots.isAllowed(`${s.url}/private`, BOT)]).toEqual([true, false]);
    expect([(await robots.rulesFor(s.url))!.source, robotsFetches(s)]).toEqual(['file', 2]);
  });

  it('disallows everything for an origin that cannot be reached or is refused by the guard', async () => {
    const s = await site({ status: 200, body: '' });
    const port = s.port;
    await s.close();
    servers.splice(0);
    const robots = policy();
    expect(await robots.isAllowed(`http://127.0.0.1:${port}/page`, BOT)).toBe(false);
    expect(await robots.isAllowed('http://10.0.0.1/page', BOT)).toBe(false);
    expect((await robots.rulesFor('http://10.0.0.1/page'))!.source).toBe('unreachable');
  });

  it('keeps a file for its TTL only, and shares one fetch among concurrent questions', async () => {
    let now = 0;
    let body = 'User-agent: *\nDisallow: /a';
    const s = await site(() => ({ status: 200, body }));
    const robots = policy({ now: () => now, ttlMs: 1000 });
    const answers = await Promise.all(Array.from({ length: 10 }, () => robots.isAllowed(`${s.url}/a`, BOT)));
    expect(answers).toEqual(Array(10).fill(false));
    expect(robotsFetches(s)).toBe(1);
    body = 'User-agent: *\nDisallow: /b';
    now = 999;
    expect(await robots.isAllowed(`${s.url}/a`, BOT)).toBe(false);
    now = 1001;
    expect(await robots.isAllowed(`${s.url}/a`, BOT)).toBe(true);
    expect(await robots.isAllowed(`${s.url}/b`, BOT)).toBe(false);
    expect(robotsFetches(s)).toBe(2);
  });

  it('parses only the first maxBytes of a file', async () => {
    const padding = `# ${'x'.repeat(2000)}\n`;
    const s = await site({ status: 200, body: `User-agent: *\nDisallow: /early\n${padding}Disallow: /late\n` });
    const robots = policy({ maxBytes: 1000 });
    expect(await robots.isAllowed(`${s.url}/early`, BOT)).toBe(false);
    expect(await robots.isAllowed(`${s.url}/late`, BOT)).toBe(true);
  });

  it('caps a crawl-delay and bounds the cache by origins', async () => {
    const a = await site({ status: 200, body: 'User-agent: *\nCrawl-delay: 3600' });
    const b = await site({ status: 404 });
    const robots = policy({ maxOrigins: 1, maxCrawlDelayMs: 10_000 });
    expect(await robots.crawlDelayMs(`${a.url}/`, BOT)).toBe(10_000);
    await robots.isAllowed(`${b.url}/`, BOT);
    await robots.isAllowed(`${a.url}/`, BOT);
    // `a` left the one-origin cache when `b` came in, so it was fetched again.
    expect(robotsFetches(a)).toBe(2);
  });

  it('answers no for URLs that are not http(s) or do not parse, and does not let one origin decide for another', async () => {
    const s = await site({ status: 404 });
    const robots = policy();
    expect(await robots.isAllowed('ftp://example.com/file', BOT)).toBe(false);
    expect(await robots.isAllowed('not a url', BOT)).toBe(false);
    const rules = await robots.rulesFor(`${s.url}/`);
    expect(rules!.isAllowed(`${s.url}/x`, BOT)).toBe(true);
    expect(rules!.isAllowed('http://127.0.0.2:1/x', BOT)).toBe(false);
  });
});

describe('OutboundHttpClient with robots', () => {
  it('checks robots.txt for the URL and for every redirect hop, with the product token of its user agent', async () => {
    const s = await startServer((req, res) => {
      if (req.path === '/robots.txt') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: LoreBot\nDisallow: /private\n\nUser-agent: *\nDisallow: /');
      if (req.path === '/moved') return void res.writeHead(302, { location: '/private/page' }).end();
      res.end(`page ${req.path}`);
    });
    servers.push(s);
    const client = new OutboundHttpClient({ guard: new TargetGuard({ allowLoopback: true }), userAgent: `${BOT}/1 (+https://lore.example/bot)`, timeoutMs: 2000 });
    clients.push(client);
    const robots = new RobotsPolicy({ client });
    expect(client.robotsAgent).toBe(BOT);

    const ok = await client.fetch({ url: `${s.url}/public`, robots });
    expect(ok.text()).toBe('page /public');
    await expect(client.fetch({ url: `${s.url}/private/page`, robots })).rejects.toMatchObject({ kind: 'disallowed' });
    await expect(client.fetch({ url: `${s.url}/moved`, robots })).rejects.toMatchObject({ kind: 'disallowed' });
    // The disallowed pages were never requested; robots.txt once for the origin.
    expect(s.requests.map((r) => r.path)).toEqual(['/robots.txt', '/public', '/moved']);
    // Without the option the client does not read robots.txt (API calls and webhook deliveries).
    expect((await client.fetch({ url: `${s.url}/private/page` })).status).toBe(200);
  });

  it('reports a forbidden URL as refused before asking robots.txt', async () => {
    const client = new OutboundHttpClient({ guard: new TargetGuard(), userAgent: `${BOT}/1`, timeoutMs: 2000 });
    clients.push(client);
    await expect(client.fetch({ url: 'http://169.254.169.254/latest/meta-data/', robots: new RobotsPolicy({ client }) })).rejects.toMatchObject({ kind: 'refused' });
  });
});
