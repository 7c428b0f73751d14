import { OutboundError, OutboundHttpClient, RobotsPolicy, TargetGuard, type OutboundRequest, type OutboundResponse } from '@lore/outbound';
import { http } from '../support/http';
import { LoopbackSearch, type SearxngResponse } from '../support/loopback-search';
import { LORE_AGENT, LoopbackWeb, SITE_NAMES, SPECIAL_PATHS, extractLinks, type SiteName } from '../support/loopback-web';

/**
 * The loopback test world (test/support/loopback-web.ts, loopback-search.ts) is what it says, and Lore's outbound
 * client works against it: robots.txt, redirects re-guarded, the size and time limits, conditional requests,
 * sitemaps, and a SearXNG query whose results are fetched. Later suites (the `web` connector source, web research,
 * the agentic crawler) build on this world.
 */

const USER_AGENT = `${LORE_AGENT}/1 (+https://lore.example/bot)`;

let web: LoopbackWeb;
let search: LoopbackSearch;
let client: OutboundHttpClient;
let robots: RobotsPolicy;

beforeAll(async () => {
  web = await new LoopbackWeb({ seed: 7 }).start();
  search = await new LoopbackSearch(web).start();
  // Loopback is opened the way docs/outbound.md says: a guard policy (allowLoopback), here with the world's resolver.
  client = new OutboundHttpClient({ guard: new TargetGuard({ allowLoopback: true, lookup: web.lookup }), userAgent: USER_AGENT });
  robots = new RobotsPolicy({ client });
});

afterAll(async () => {
  client.close();
  await search.close();
  await web.close();
});

async function failure(request: Promise<unknown>): Promise<OutboundError> {
  try {
    await request;
  } catch (err) {
    if (err instanceof OutboundError) return err;
    throw err;
  }
  throw new Error('the fetch succeeded');
}

function get(url: string, extra: Partial<OutboundRequest> = {}): Promise<OutboundResponse> {
  return client.fetch({ url, timeoutMs: 10_000, ...extra });
}

/** `<loc>` and `<lastmod>` of each `<url>` or `<sitemap>` entry: enough of the sitemap protocol for these tests. */
function parseSitemap(xml: string): { kind: 'urlset' | 'sitemapindex'; entries: Array<{ loc: string; lastmod: string | null }> } {
  const kind = /<sitemapindex[\s>]/.test(xml) ? 'sitemapindex' : 'urlset';
  const tag = kind === 'urlset' ? 'url' : 'sitemap';
  const unescape = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
  const entries = [...xml.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => ({
    loc: unescape(/<loc>\s*([\s\S]*?)\s*<\/loc>/.exec(m[1]!)![1]!),
    lastmod: /<lastmod>\s*([\s\S]*?)\s*<\/lastmod>/.exec(m[1]!)?.[1] ?? null,
  }));
  return { kind, entries };
}

async function sitemapUrls(site: SiteName): Promise<Map<string, string | null>> {
  const root = parseSitemap((await get(`${web.siteUrl(site)}/sitemap.xml`)).text());
  const children = root.kind === 'sitemapindex' ? await Promise.all(root.entries.map(async (e) => parseSitemap((await get(e.loc)).text()).entries)) : [root.entries];
  return new Map(children.flat().map((e) => [e.loc, e.lastmod]));
}

/** Same instant as an ISO string, at the second (sitemaps write `+00:00`, the truth `Z` with milliseconds). */
function sameSecond(a: string | null, b: string): boolean {
  return a !== null && Math.floor(Date.parse(a) / 1000) === Math.floor(Date.parse(b) / 1000);
}

/**
 * A minimal polite crawler: breadth first from the home page, same origin, robots.txt through the client, links of
 * HTML pages only, `rel="nofollow"` and `<meta name="robots" content="nofollow">` honoured.
 */
async function crawl(site: SiteName): Promise<{ fetched: Map<string, OutboundResponse>; failed: Map<string, string> }> {
  const origin = web.siteUrl(site);
  const queue = [`${origin}/`];
  const seen = new Set(queue);
  const fetched = new Map<string, OutboundResponse>();
  const failed = new Map<string, string>();
  while (queue.length > 0) {
    const url = queue.shift()!;
    let res: OutboundResponse;
    try {
      res = await get(url, { robots });
    } catch (err) {
      failed.set(url, (err as OutboundError).kind);
      continue;
    }
    if (res.status !== 200) {
      failed.set(url, String(res.status));
      continue;
    }
    fetched.set(url, res);
    if (res.contentType !== 'text/html') continue;
    // Decoded as a page parser would: the header's charset, else <meta charset>, else UTF-8.
    const latin = res.body.toString('latin1');
    const html = res.charset ? res.text() : /<meta charset="iso-8859-1">/i.test(latin) ? latin : res.body.toString('utf8');
    if (/<meta\s+name="robots"\s+content="[^"]*nofollow/i.test(html)) continue;
    for (const link of extractLinks(html, res.url)) {
      if (link.nofollow || new URL(link.url).origin !== origin || seen.has(link.url)) continue;
      seen.add(link.url);
      queue.push(link.url);
    }
  }
  return { fetched, failed };
}

describe('the loopback web', () => {
  it('is generated from its seed: the same seed builds the same pages, another seed other ones', async () => {
    const twin = await new LoopbackWeb({ seed: 7 }).start();
    const other = await new LoopbackWeb({ seed: 8 }).start();
    try {
      const shape = (w: LoopbackWeb) => w.pages().map((p) => ({ site: p.site, path: p.path, title: p.title, keyword: p.keyword, text: p.text, lastmod: p.lastmod }));
      expect(shape(twin)).toEqual(shape(web));
      expect(shape(other).map((p) => p.title)).not.toEqual(shape(web).map((p) => p.title));
      // The special paths do not depend on the seed.
      expect(Object.values(other.special).map((u) => new URL(u).pathname)).toEqual(Object.values(SPECIAL_PATHS));
      const keywords = web.pages().flatMap((p) => (p.keyword ? [p.keyword] : []));
      expect(new Set(keywords).size).toBe(keywords.length);
    } finally {
      await twin.close();
      await other.close();
    }
  });

  it('tells its sites apart by Host; the bare address is the hub; other hosts answer 421', async () => {
    const hub = await get(`${web.url}/`);
    expect(extractLinks(hub.text(), hub.url).map((l) => l.url)).toEqual(SITE_NAMES.map((s) => `${web.siteUrl(s)}/`));
    for (const site of SITE_NAMES) {
      const home = await get(`${web.siteUrl(site)}/`);
      expect(home.status).toBe(200);
      expect(home.text()).toContain(web.pages(site).find((p) => p.path === '/')!.keyword!);
    }
    expect((await http(web.url, 'GET', '/', { headers: { host: `zeta.localhost:${web.port}` } })).status).toBe(421);
    const post = await http(web.url, 'POST', '/', { headers: { host: `alpha.localhost:${web.port}` }, raw: 'x' });
    expect([post.status, post.headers.allow]).toEqual([405, 'GET, HEAD']);
    // The world's resolver knows its own names only.
    await expect(web.lookup('zeta.localhost')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    expect((await failure(get('https://www.example.com/'))).kind).toBe('refused');
  });

  it('serves the robots.txt variants: groups on alpha, one group on beta, none on gamma (404), 500 on delta, an empty file on the hub', async () => {
    const alpha = await get(`${web.siteUrl('alpha')}/robots.txt`);
    expect(alpha.contentType).toBe('text/plain');
    expect(alpha.text()).toMatch(/User-agent: LoreBot\nAllow: \/private\/open.html\nDisallow: \/private\/\nDisallow: \/\*\?sessionid=\nCrawl-delay: 0.25/);
    expect(alpha.text()).toContain(`Sitemap: ${web.siteUrl('alpha')}/sitemap.xml`);
    expect((await get(`${web.siteUrl('beta')}/robots.txt`)).text()).toMatch(/User-agent: \*\nDisallow: \/drafts\/\nCrawl-delay: 1\n/);
    expect((await get(`${web.siteUrl('gamma')}/robots.txt`)).status).toBe(404);
    expect((await get(`${web.siteUrl('delta')}/robots.txt`)).status).toBe(500);
    const hub = await get(`${web.url}/robots.txt`);
    expect([hub.status, hub.body.length]).toEqual([200, 0]);
  });

  it('knows its truth: a crawl by links finds exactly the reachable pages robots.txt allows', async () => {
    for (const site of ['gamma', 'alpha', 'beta'] as const) {
      const { fetched, failed } = await crawl(site);
      // Where a redirect led (res.url); alpha's pages ignore query strings (?ref=nav …), so the page is the URL's path.
      const found = new Set([...fetched.values()].map(({ url: u }) => web.pages(site).find((p) => p.url === u || p.url === u.split('?')[0])?.path ?? `unknown ${u}`));
      // By construction no page is reachable only through a page robots.txt forbids, so "reachable and allowed" is what a crawl finds.
      const expected = web.pages(site).filter((p) => p.reachable && p.robotsAllowed).map((p) => p.path);
      expect([...found].sort()).toEqual(expected.sort());
      if (site === 'gamma') {
        expect(found.has('/wiki/Caf%C3%A9')).toBe(true);
        expect(Object.fromEntries(failed)).toEqual({ [`${web.siteUrl('gamma')}/wiki/Nowhere`]: '404' });
      }
      if (site === 'alpha') {
        const a = web.siteUrl('alpha');
        expect(failed.get(`${a}/private/secret.html`)).toBe('disallowed');
        expect([...failed].filter(([u]) => u.includes('sessionid='))).toEqual([[expect.stringContaining('/docs/page-7.html?sessionid='), 'disallowed']]);
        expect(failed.get(`${a}/redirect/metadata`)).toBe('refused');
        expect(failed.get(`${a}/redirect/loop/a`)).toBe('too_many_redirects');
        expect(failed.get(`${a}/docs/missing.html`)).toBe('404');
        expect(failed.get(`${a}/gone.html`)).toBe('410');
        expect(web.requestsTo('alpha', '/private/secret.html')).toEqual([]);
        // Pages behind nofollow and the orphan are real, but a crawl by links does not find them.
        for (const path of ['/meta/only-nofollow.html', '/meta/behind-noindex.html', '/orphan.html']) {
          expect(web.page(path)).toMatchObject({ reachable: false });
          expect(found.has(path)).toBe(false);
        }
      }
      if (site === 'beta') expect(failed.get(`${web.siteUrl('beta')}/drafts/upcoming.html`)).toBe('disallowed');
    }
  });

  it('lists in its sitemaps exactly the pages marked inSitemap, with their lastmod; beta through a sitemap index', async () => {
    const index = parseSitemap((await get(`${web.siteUrl('beta')}/sitemap.xml`)).text());
    expect(index.kind).toBe('sitemapindex');
    expect(index.entries.map((e) => e.loc)).toEqual([`${web.siteUrl('beta')}/sitemaps/posts.xml`, `${web.siteUrl('beta')}/sitemaps/pages.xml`]);
    for (const e of index.entries) expect(e.lastmod).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    for (const site of ['alpha', 'beta', 'delta'] as const) {
      const listed = await sitemapUrls(site);
      const truth = web.pages(site).filter((p) => p.inSitemap);
      expect([...listed.keys()].sort()).toEqual(truth.map((p) => p.url).sort());
      for (const p of truth) expect(sameSecond(listed.get(p.url)!, p.lastmod)).toBe(true);
    }
    expect((await get(`${web.siteUrl('gamma')}/sitemap.xml`)).status).toBe(404);
    // The orphan is only in the sitemap.
    expect(web.page(SPECIAL_PATHS.orphan)).toMatchObject({ inSitemap: true, reachable: false });
  });

  it('serves PDF, plain text, JSON and PNG with their content types', async () => {
    const pdf = await get(web.special.pdf);
    expect(pdf.contentType).toBe('application/pdf');
    const pdfText = pdf.body.toString('latin1');
    expect(pdfText.startsWith('%PDF-1.4\n')).toBe(true);
    expect(pdfText.trimEnd().endsWith('%%EOF')).toBe(true);
    const startxref = Number(/startxref\n(\d+)\n/.exec(pdfText)![1]);
    expect(pdfText.slice(startxref, startxref + 4)).toBe('xref');
    expect(pdfText).toContain(web.page(SPECIAL_PATHS.pdf)!.keyword!);

    const txt = await get(web.special.text);
    expect([txt.contentType, txt.charset]).toEqual(['text/plain', 'utf-8']);
    expect(txt.text()).toContain(web.page(SPECIAL_PATHS.text)!.keyword!);

    const json = await get(web.special.json);
    expect(json.contentType).toBe('application/json');
    expect(JSON.parse(json.text())).toMatchObject({ site: 'alpha', keyword: web.page(SPECIAL_PATHS.json)!.keyword });

    const png = await get(web.special.image);
    expect(png.contentType).toBe('image/png');
    expect(png.body.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(png.body.subarray(12, 16).toString('latin1')).toBe('IHDR');
    expect(png.body.subarray(-8, -4).toString('latin1')).toBe('IEND');
  });

  it('serves charset variants: ISO-8859-1 in the header, only in <meta>, and UTF-8', async () => {
    const latin = await get(web.special.latin1);
    expect(latin.charset).toBe('iso-8859-1');
    expect(latin.body.includes(Buffer.from('Grüße', 'latin1'))).toBe(true);
    expect(latin.text()).toContain('Grüße aus der Werkstatt');
    expect(web.page(SPECIAL_PATHS.latin1)).toMatchObject({ title: 'Grüße aus der Werkstatt', lang: 'de' });

    // The charset is only in <meta>: the client decodes UTF-8 (sniffing is the page parser's business).
    const meta = await get(web.special.metaCharset);
    expect([meta.contentType, meta.charset]).toEqual(['text/html', null]);
    expect(meta.body.toString('latin1')).toContain('<meta charset="iso-8859-1">');
    expect(meta.text()).not.toContain('Café');
    expect(web.page(SPECIAL_PATHS.metaCharset)!.text).toContain('Café crème à la française');

    const utf8 = await get(web.special.utf8);
    expect(utf8.text()).toContain('日本語とΕλληνικά');
  });

  it('marks noindex and nofollow (meta and header), nofollow links and canonical links', async () => {
    expect(web.page(SPECIAL_PATHS.noindex)).toMatchObject({ noindex: true, nofollow: true });
    expect((await get(web.special.noindex)).text()).toContain('<meta name="robots" content="noindex,nofollow">');
    expect(web.page(SPECIAL_PATHS.headerNoindex)).toMatchObject({ noindex: true, nofollow: false });
    expect((await get(web.special.headerNoindex)).headers['x-robots-tag']).toBe('noindex');
    const a = web.siteUrl('alpha');
    expect(web.page(SPECIAL_PATHS.nofollowLinks)!.links).toEqual([
      { url: `${a}/meta/only-nofollow.html`, nofollow: true },
      { url: `${a}/meta/only-nofollow.html?from=sponsor`, nofollow: true },
      { url: `${a}/docs/page-1.html`, nofollow: false },
    ]);
    expect(web.page(SPECIAL_PATHS.print)).toMatchObject({ canonical: `${a}/docs/page-2.html` });
    expect((await get(web.special.print)).text()).toContain(`<link rel="canonical" href="${a}/docs/page-2.html">`);
    // Odd links resolve as a browser would; mailto, javascript, tel and the anchor without href are not links.
    expect(web.page(SPECIAL_PATHS.oddLinks)!.links.map((l) => l.url.replace(`:${web.port}`, ''))).toEqual([
      'http://alpha.localhost/docs/missing.html',
      'http://alpha.localhost/gone.html',
      'http://alpha.localhost/redirect/loop/a',
      'http://alpha.localhost/redirect/metadata',
      expect.stringMatching(/^https:\/\/www\.example\.com\//),
      'http://alpha.localhost/docs/odd-links.html',
      'http://alpha.localhost/about.html',
      'http://beta.localhost/about.html',
      'http://alpha.localhost/docs/odd-links.html?view=compact',
      'http://alpha.localhost/docs/page-1.html',
      'http://alpha.localhost/docs/page-2.html',
      'http://alpha.localhost/docs/page-3.html',
      'http://alpha.localhost/docs/page-4.html',
      'http://alpha.localhost/docs/page-5.html?a=1&b=2',
    ]);
  });

  it('answers conditional requests with 304 (If-None-Match first, then If-Modified-Since) and records them', async () => {
    const url = `${web.siteUrl('alpha')}/docs/page-3.html`;
    const first = await get(url);
    const etag = first.headers.etag!;
    const lastModified = first.headers['last-modified']!;
    expect(etag).toBe(web.page(url)!.etag);
    expect(sameSecond(new Date(lastModified).toISOString(), web.page(url)!.lastmod)).toBe(true);

    web.clearRequests();
    const byTag = await get(url, { headers: { 'if-none-match': etag } });
    expect([byTag.status, byTag.body.length, byTag.headers.etag]).toEqual([304, 0, etag]);
    const byDate = await get(url, { headers: { 'if-modified-since': lastModified } });
    expect(byDate.status).toBe(304);
    // A stale tag wins over a date that would match.
    expect((await get(url, { headers: { 'if-none-match': '"stale"', 'if-modified-since': lastModified } })).status).toBe(200);
    expect((await get(url, { headers: { 'if-modified-since': new Date(Date.parse(lastModified) - 1000).toUTCString() } })).status).toBe(200);
    expect(web.requests.map((r) => [r.status, r.headers['if-none-match'] ?? null, r.headers['if-modified-since'] ?? null])).toEqual([
      [304, etag, null],
      [304, null, lastModified],
      [200, '"stale"', lastModified],
      [200, null, expect.any(String)],
    ]);
    expect(web.requests.every((r) => r.host === `alpha.localhost:${web.port}` && r.site === 'alpha' && r.headers['user-agent'] === USER_AGENT)).toBe(true);
  });

  it('changes, removes and adds pages for incremental crawls, moving lastmod, ETags and sitemaps with them', async () => {
    const world = await new LoopbackWeb({ seed: 7 }).start();
    const worldClient = new OutboundHttpClient({ guard: new TargetGuard({ allowLoopback: true, lookup: world.lookup }), userAgent: USER_AGENT });
    const fetch = (url: string, headers: Record<string, string> = {}) => worldClient.fetch({ url, headers });
    const listed = async (url: string) => {
      const root = parseSitemap((await fetch(url)).text());
      return root;
    };
    try {
      const B = world.siteUrl('beta');
      const post = world.pages('beta').find((p) => p.path.startsWith('/posts/'))!;
      const before = await fetch(post.url);
      const indexBefore = await listed(`${B}/sitemap.xml`);
      const clock = world.now();

      const changed = world.change(post.url, '<!doctype html><html lang="en"><head><title>Rewritten</title></head><body><p>New words.</p><a href="/about.html">About</a></body></html>');
      expect(world.now()).toBe(clock + 3600_000);
      expect(changed).toMatchObject({ title: 'Rewritten', text: 'New words. About', lastmod: new Date(world.now()).toISOString(), links: [{ url: `${B}/about.html`, nofollow: false }] });
      const stale = await fetch(post.url, { 'if-none-match': before.headers.etag! });
      expect(stale.status).toBe(200);
      expect(stale.headers.etag).not.toBe(before.headers.etag);
      expect(stale.text()).toContain('New words.');
      expect((await fetch(post.url, { 'if-modified-since': before.headers['last-modified']! })).status).toBe(200);
      expect((await fetch(post.url, { 'if-none-match': stale.headers.etag! })).status).toBe(304);
      const posts = await listed(`${B}/sitemaps/posts.xml`);
      expect(sameSecond(posts.entries.find((e) => e.loc === post.url)!.lastmod, changed.lastmod)).toBe(true);
      const indexAfter = await listed(`${B}/sitemap.xml`);
      expect(sameSecond(indexAfter.entries[0]!.lastmod, changed.lastmod)).toBe(true);
      expect(indexAfter.entries[1]!.lastmod).toBe(indexBefore.entries[1]!.lastmod);

      world.remove(post.url);
      expect((await fetch(post.url)).status).toBe(410);
      expect(world.page(post.url)).toBeUndefined();
      expect((await listed(`${B}/sitemaps/posts.xml`)).entries.map((e) => e.loc)).not.toContain(post.url);
      expect(sameSecond((await listed(`${B}/sitemap.xml`)).entries[0]!.lastmod, new Date(world.now()).toISOString())).toBe(true);
      const about = `${B}/about.html`;
      world.remove(about, 404);
      expect((await fetch(about)).status).toBe(404);

      const added = world.add(`${B}/posts/2026/03/fresh.html`, '<!doctype html><html lang="en"><head><title>Fresh</title></head><body><p>Just in.</p></body></html>');
      expect((await fetch(added.url)).text()).toContain('Just in.');
      expect(added).toMatchObject({ inSitemap: true, reachable: false, lastmod: new Date(world.now()).toISOString() });
      const postsNow = await listed(`${B}/sitemaps/posts.xml`);
      expect(sameSecond(postsNow.entries.find((e) => e.loc === added.url)!.lastmod, added.lastmod)).toBe(true);
      // A path of alpha may be given without its origin; a removed page can come back.
      world.add('/gone-and-back.html', '<title>Back</title>');
      expect(world.page('/gone-and-back.html')).toMatchObject({ title: 'Back', inSitemap: true });
      expect(() => world.add(added.url, 'again')).toThrow(/exists/);
      expect(() => world.change(`${B}/nothing.html`, 'x')).toThrow(/no document/);
      world.add(about, '<title>About again</title>');
      expect((await fetch(about)).status).toBe(200);
    } finally {
      worldClient.close();
      await world.close();
    }
  });
});

describe("Lore's outbound client against the loopback web", () => {
  it('fetches a page as itself: its user agent, the Host of the site, no compression', async () => {
    const page = web.pages('alpha').find((p) => p.path === '/docs/page-1.html')!;
    web.clearRequests();
    const res = await get(page.url);
    expect([res.status, res.contentType, res.charset, res.url, res.redirects]).toEqual([200, 'text/html', 'utf-8', page.url, []]);
    expect(res.text()).toContain(page.keyword!);
    expect(res.body.equals(page.body)).toBe(true);
    expect(web.requests).toEqual([
      expect.objectContaining({
        method: 'GET',
        host: `alpha.localhost:${web.port}`,
        site: 'alpha',
        path: '/docs/page-1.html',
        status: 200,
        bytesSent: page.body.length,
        headers: expect.objectContaining({ 'user-agent': USER_AGENT, 'accept-encoding': 'identity' }),
      }),
    ]);
  });

  it('honours robots.txt: disallowed paths are refused before any request, crawl-delays are read, a 500 shuts a site', async () => {
    const a = web.siteUrl('alpha');
    web.clearRequests();
    expect((await failure(get(web.special.disallowed, { robots }))).kind).toBe('disallowed');
    expect((await failure(get(`${a}/docs/page-7.html?sessionid=x1`, { robots }))).kind).toBe('disallowed');
    expect((await get(web.special.allowedInDisallowed, { robots })).status).toBe(200);
    // The print copy is closed to everyone but LoreBot's own group.
    expect((await get(web.special.print, { robots })).status).toBe(200);
    expect(await robots.isAllowed(web.special.print, 'SomeOtherBot')).toBe(false);
    expect(await robots.isAllowed(`${a}/docs/page-1.html`, 'ShutOutBot')).toBe(false);
    expect(web.requestsTo('alpha', SPECIAL_PATHS.disallowed)).toEqual([]);

    expect(await robots.crawlDelayMs(`${a}/`, client.robotsAgent)).toBe(250);
    expect(await robots.crawlDelayMs(`${a}/`, 'SomeOtherBot')).toBe(5000);
    expect(await robots.crawlDelayMs(`${web.siteUrl('beta')}/`, client.robotsAgent)).toBe(1000);
    expect(await robots.crawlDelayMs(`${web.siteUrl('gamma')}/`, client.robotsAgent)).toBeNull();

    const deltaPage = web.pages('delta')[0]!;
    expect((await failure(get(deltaPage.url, { robots }))).kind).toBe('disallowed');
    expect((await robots.rulesFor(deltaPage.url))!.source).toBe('unreachable');
    expect((await robots.rulesFor(`${web.siteUrl('gamma')}/`))!.source).toBe('missing');

    // The truth agrees with robots-parser for every page of the world.
    for (const p of web.pages()) expect([p.url, await robots.isAllowed(p.url, client.robotsAgent)]).toEqual([p.url, p.robotsAllowed]);
    // One robots.txt request per origin, however many questions.
    for (const site of SITE_NAMES) expect(web.requestsTo(site, '/robots.txt').length).toBeLessThanOrEqual(1);
  });

  it('follows every redirect status and a chain, each hop guarded, requested and recorded', async () => {
    const a = web.siteUrl('alpha');
    for (const [path, target] of [
      [SPECIAL_PATHS.redirect301, '/docs/page-1.html'],
      [SPECIAL_PATHS.redirect302, '/docs/page-2.html'],
      [SPECIAL_PATHS.redirect307, '/docs/page-3.html'],
      [SPECIAL_PATHS.redirect308, '/docs/page-4.html'],
      [SPECIAL_PATHS.movedPage, '/docs/page-3.html'],
    ] as const) {
      const res = await get(`${a}${path}`);
      expect([res.status, res.url, res.redirects]).toEqual([200, `${a}${target}`, [`${a}${target}`]]);
    }
    web.clearRequests();
    const chain = await get(web.special.redirectChain, { robots });
    expect(chain.redirects).toEqual([`${a}/redirect/chain/2`, `${a}/redirect/chain/3`, `${a}/docs/page-6.html`]);
    expect(chain.text()).toContain(web.page('/docs/page-6.html')!.keyword!);
    expect(web.requests.filter((r) => r.path !== '/robots.txt').map((r) => [r.path, r.status])).toEqual([
      ['/redirect/chain/1', 302],
      ['/redirect/chain/2', 301],
      ['/redirect/chain/3', 308],
      ['/docs/page-6.html', 200],
    ]);
    const cross = await get(web.special.redirectCrossSite, { robots });
    expect(cross.url).toBe(`${web.siteUrl('beta')}/about.html`);
    // A redirect into a disallowed path is refused at that hop: the path is never requested.
    expect((await failure(get(web.special.redirectDisallowed, { robots }))).kind).toBe('disallowed');
    expect(web.requestsTo('alpha', SPECIAL_PATHS.disallowed)).toEqual([]);
    expect((await failure(get(web.special.redirectLoop))).kind).toBe('too_many_redirects');
  });

  it('refuses redirects to the metadata address, a private address and off the world (the SSRF re-guard)', async () => {
    for (const special of ['redirectMetadata', 'redirectPrivate', 'redirectOffWorld'] as const) {
      web.clearRequests();
      const err = await failure(get(web.special[special]));
      expect(err.kind).toBe('refused');
      expect(err.message).not.toMatch(/169\.254|10\.0\.0\.1/);
      // Only the first hop reached the world; the guard stopped the second before any connection.
      expect(web.requests.map((r) => r.path)).toEqual([SPECIAL_PATHS[special]]);
    }
    expect((await failure(get('http://169.254.169.254/latest/meta-data/'))).kind).toBe('refused');
  });

  it('stops the huge page at the body limit, and the world stops writing it', async () => {
    web.clearRequests();
    const limit = 1024 * 1024;
    const err = await failure(get(web.special.huge, { maxResponseBytes: limit }));
    expect(err.kind).toBe('too_large');
    const cut = await get(web.special.huge, { maxResponseBytes: limit, oversize: 'truncate' });
    expect([cut.truncated, cut.body.length]).toEqual([true, limit]);
    expect(cut.text().startsWith('<!doctype html>')).toBe(true);
    const declared = await failure(get(web.special.hugeDeclared, { maxResponseBytes: limit }));
    expect([declared.kind, declared.partial.body]).toEqual(['too_large', null]);
    await web.idle();
    // What was written is what socket buffers hold, a sliver of the 256 MiB the page would be.
    for (const r of web.requests) {
      expect(r.done).toBe(true);
      expect(r.bytesSent).toBeLessThan(web.hugeBytes / 8);
    }
  });

  it("times out on the slow page with the client's own deadline, keeping what had arrived", async () => {
    const started = performance.now();
    const err = await failure(get(web.special.slow, { timeoutMs: 400 }));
    const elapsed = performance.now() - started;
    expect(err.kind).toBe('timeout');
    expect(elapsed).toBeGreaterThanOrEqual(350);
    expect(elapsed).toBeLessThan(web.slow.totalMs);
    expect(err.partial.status).toBe(200);
    expect(err.partial.body!.toString('utf8')).toContain('<title>A slow page</title>');
    expect(err.partial.body!.toString('utf8')).not.toContain('</html>');

    // A shorter trickle completes: the time is the server's, the deadline generous.
    const previous = web.slow;
    web.slow = { totalMs: 300, chunks: 3 };
    try {
      const res = await get(web.special.slow, { timeoutMs: 10_000 });
      expect(res.text()).toContain('Piece 3 of 3');
      expect(res.elapsedMs).toBeGreaterThanOrEqual(250);
    } finally {
      web.slow = previous;
    }
    await web.idle();
  });

  it('gets 304 for a conditional request it makes', async () => {
    const page = web.pages('gamma')[0]!;
    const res = await get(page.url, { headers: { 'if-none-match': page.etag } });
    expect([res.status, res.body.length]).toEqual([304, 0]);
    const since = await get(page.url, { headers: { 'if-modified-since': new Date(page.lastmod).toUTCString() } });
    expect(since.status).toBe(304);
  });

  it('runs a SearXNG query and fetches its results, robots.txt deciding which it may', async () => {
    const target = web.pages('beta').find((p) => p.path.startsWith('/posts/'))!;
    const one = JSON.parse((await get(`${search.url}/search?q=${target.keyword}&format=json`)).text()) as SearxngResponse;
    expect(one.results.map((r) => r.url)).toEqual([target.url]);
    const page = await get(one.results[0]!.url, { robots });
    expect(page.text()).toContain(target.keyword!);

    // A common word: results across the world, some on sites or paths robots.txt closes.
    const word = 'reference';
    const body = JSON.parse((await get(`${search.url}/search?q=${word}&format=json&pageno=1`)).text()) as SearxngResponse;
    const all: string[] = [];
    for (let pageno = 1; pageno <= Math.ceil(body.number_of_results! / 10); pageno++) {
      const r = JSON.parse((await get(`${search.url}/search?q=${word}&format=json&pageno=${pageno}`)).text()) as SearxngResponse;
      all.push(...r.results.map((x) => x.url));
    }
    expect(all.length).toBe(body.number_of_results);
    let disallowed = 0;
    for (const url of all) {
      const truth = web.pages().find((p) => p.url === url)!;
      if (truth.robotsAllowed) {
        const res = await get(url, { robots });
        expect([url, res.status]).toEqual([url, 200]);
        expect(res.body.toString('latin1')).toMatch(/reference/i);
      } else {
        expect((await failure(get(url, { robots }))).kind).toBe('disallowed');
        disallowed += 1;
      }
    }
    expect(disallowed).toBeGreaterThan(0);
  });
});

describe('the SearXNG endpoint', () => {
  const query = async (params: Record<string, string>, method: 'GET' | 'POST' = 'GET') => {
    const form = new URLSearchParams(params).toString();
    const res =
      method === 'GET'
        ? await get(`${search.url}/search?${form}`)
        : await get(`${search.url}/search`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
    return { res, json: res.contentType === 'application/json' ? (JSON.parse(res.text()) as SearxngResponse & { error?: string }) : null };
  };

  it('answers in SearXNG JSON, field by field', async () => {
    const post = web.pages('beta').find((p) => p.path.startsWith('/posts/'))!;
    search.script(post.keyword!, { answers: ['A scripted answer.'] });
    const { res, json } = await query({ q: post.keyword!, format: 'json' });
    expect([res.status, res.contentType]).toEqual([200, 'application/json']);
    expect(Object.keys(json!).sort()).toEqual(['answers', 'corrections', 'infoboxes', 'number_of_results', 'query', 'results', 'suggestions', 'unresponsive_engines']);
    expect(json!.query).toBe(post.keyword);
    expect(json!.number_of_results).toBe(1);
    expect(json!.results).toHaveLength(1);
    const r = json!.results[0]!;
    const u = new URL(post.url);
    expect(Object.keys(r).sort()).toEqual(
      ['author', 'category', 'content', 'engine', 'engines', 'img_src', 'parsed_url', 'positions', 'priority', 'pubdate', 'publishedDate', 'score', 'template', 'thumbnail', 'title', 'url'].sort(),
    );
    expect(r.url).toBe(post.url);
    expect(r.title).toBe(post.title);
    expect(r.content).toContain(post.keyword!);
    expect(r.content.length).toBeLessThanOrEqual(200);
    expect(r.engine).toBe('loopback');
    expect(r.engines).toEqual(['loopback']);
    expect(r.template).toBe('default.html');
    expect(r.parsed_url).toEqual(['http', `beta.localhost:${web.port}`, u.pathname, '', '', '']);
    expect([r.img_src, r.thumbnail, r.priority]).toEqual(['', '', '']);
    expect(r.positions).toEqual([1]);
    expect(r.score).toBe(1);
    expect(r.category).toBe('general');
    expect(r.publishedDate).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    expect(Date.parse(r.publishedDate!)).toBe(Date.parse(post.publishedDate!));
    expect(r.pubdate).toBe(r.publishedDate!.replace('T', ' ').replace('+00:00', '+0000'));
    expect(r.author).toBe(post.author);
    expect(json!.answers).toEqual([{ url: null, engine: 'loopback', parsed_url: null, template: 'answer/legacy.html', answer: 'A scripted answer.' }]);
    expect(json!.corrections).toEqual([]);
    expect(json!.infoboxes).toEqual([]);
    expect(json!.suggestions.every((s) => typeof s === 'string' && s.startsWith(`${post.keyword} `))).toBe(true);
    expect(json!.unresponsive_engines).toEqual([]);

    // A page without a date has publishedDate null and no pubdate or author.
    const doc = web.page('/docs/page-2.html')!;
    const plain = (await query({ q: doc.keyword!, format: 'json' })).json!.results[0]!;
    expect([plain.publishedDate, 'pubdate' in plain, 'author' in plain]).toEqual([null, false, false]);
  });

  it('derives corrections, suggestions and an infobox, and reports unresponsive engines', async () => {
    const title = web.page('/docs/page-1.html')!.title.split(' ')[0]!.toLowerCase();
    const typo = await query({ q: `${title}q`, format: 'json' });
    expect([typo.json!.results, typo.json!.corrections]).toEqual([[], [title]]);
    const info = (await query({ q: 'alpha', format: 'json' })).json!;
    expect(info.infoboxes).toEqual([
      expect.objectContaining({ infobox: 'Alpha documentation', id: `${web.siteUrl('alpha')}/`, urls: [{ title: 'Home page', url: `${web.siteUrl('alpha')}/` }], engine: 'loopback', positions: '' }),
    ]);
    search.unresponsiveEngines = [['wikipedia', 'timeout'], ['brave', 'Suspended: too many requests']];
    try {
      expect((await query({ q: 'loopback', format: 'json' })).json!.unresponsive_engines).toEqual([
        ['brave', 'Suspended: too many requests'],
        ['wikipedia', 'timeout'],
      ]);
    } finally {
      search.unresponsiveEngines = [];
    }
  });

  it('pages deterministically, 10 results a page, and POST forms answer as GET does (form fields win)', async () => {
    const first = (await query({ q: 'loopback', format: 'json' })).json!;
    // General results: HTML, text and PDF (JSON is in files, the PNG in images).
    const indexed = web.pages().filter((p) => !p.noindex && /loopback/i.test(p.text) && !/^(application\/json|image\/)/.test(p.contentType));
    expect(first.number_of_results).toBe(indexed.length);
    expect(first.results.map((r) => r.positions[0])).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const second = (await query({ q: 'loopback', format: 'json', pageno: '2' })).json!;
    expect(second.results.length).toBe(10);
    expect(second.results.filter((r) => first.results.some((f) => f.url === r.url))).toEqual([]);
    expect((await query({ q: 'loopback', format: 'json' })).json).toEqual(first);
    const posted = await query({ q: 'loopback', format: 'json', pageno: '2' }, 'POST');
    expect(posted.json).toEqual(second);
    const mixed = await get(`${search.url}/search?q=ignored&format=html`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'q=loopback&format=json' });
    expect((JSON.parse(mixed.text()) as SearxngResponse).query).toBe('loopback');
    // `/` with a query redirects (308, method kept) to /search.
    const root = await get(`${search.url}/?q=loopback&format=json`);
    expect([root.redirects, (JSON.parse(root.text()) as SearxngResponse).results]).toEqual([[`${search.url}/search?q=loopback&format=json`], first.results]);
    expect(search.requests.slice(-2).map((r) => [r.method, r.path, r.status])).toEqual([
      ['GET', '/?q=loopback&format=json', 308],
      ['GET', '/search?q=loopback&format=json', 200],
    ]);
  });

  it('filters by categories, language, time range and site:', async () => {
    const q = (params: Record<string, string>) => query({ q: 'loopback', format: 'json', ...params }).then((r) => r.json!);
    const posts = web.pages('beta').filter((p) => p.publishedDate !== null);
    const news = await q({ categories: 'news' });
    expect(news.results.map((r) => r.url).sort()).toEqual(posts.map((p) => p.url).sort());
    expect(news.results.every((r) => r.category === 'news')).toBe(true);
    const images = (await query({ q: 'pixel', format: 'json', categories: 'images' })).json!;
    expect(images.results).toEqual([expect.objectContaining({ url: web.special.image, template: 'images.html', img_src: web.special.image, category: 'images' })]);
    const files = (await query({ q: 'alpha', format: 'json', category_files: 'on' })).json!;
    expect(files.results.map((r) => r.url).sort()).toEqual([web.special.json, web.special.pdf].sort());
    expect((await q({ categories: 'bogus' })).number_of_results).toBe((await q({})).number_of_results);

    expect((await q({ language: 'de' })).results.map((r) => r.url)).toEqual([web.special.latin1]);
    expect((await q({ language: 'fr-FR' })).results.map((r) => r.url)).toEqual([web.special.metaCharset]);

    const within = async (range: string) => (await q({ categories: 'news', time_range: range })).number_of_results;
    // Beta's posts are 0.5, 3, 10, 20, 45, 100, 200 and 400 days old at the epoch.
    expect([await within('day'), await within('week'), await within('month'), await within('year'), await within('')]).toEqual([1, 2, 4, 7, 8]);

    const gamma = await q({ q: 'loopback site:gamma.localhost' });
    expect(gamma.number_of_results).toBe(web.pages('gamma').length);
    expect(gamma.results.every((r) => r.url.startsWith(web.siteUrl('gamma')))).toBe(true);
  });

  it('refuses formats it has not enabled (403) and invalid parameters (400), as SearXNG does', async () => {
    for (const format of ['html', 'csv', 'rss', 'yaml']) expect((await query({ q: 'loopback', format })).res.status).toBe(403);
    expect((await get(`${search.url}/search?q=loopback`)).status).toBe(403);
    const cases: Array<[Record<string, string>, string]> = [
      [{}, 'No query'],
      [{ q: 'x', pageno: '0' }, 'Invalid value 0 for parameter pageno'],
      [{ q: 'x', pageno: 'two' }, 'Invalid value two for parameter pageno'],
      [{ q: 'x', time_range: 'decade' }, 'Invalid value decade for parameter time_range'],
      [{ q: 'x', safesearch: '3' }, 'Invalid value 3 for parameter safesearch'],
      [{ q: 'x', language: 'English' }, 'Invalid value English for parameter language'],
    ];
    for (const [params, error] of cases) {
      const { res, json } = await query({ format: 'json', ...params });
      expect([res.status, json]).toEqual([400, { error }]);
    }
    for (const safesearch of ['0', '1', '2']) expect((await query({ q: 'x', format: 'json', safesearch })).res.status).toBe(200);

    const closed = await new LoopbackSearch(web, { json: false }).start();
    const newer = await new LoopbackSearch(web, { numberOfResults: false }).start();
    try {
      expect((await get(`${closed.url}/search?q=loopback&format=json`)).status).toBe(403);
      expect('number_of_results' in (JSON.parse((await get(`${newer.url}/search?q=loopback&format=json`)).text()) as object)).toBe(false);
    } finally {
      await closed.close();
      await newer.close();
    }
  });

  it('simulates rate limiting and overload, and records requests', async () => {
    search.failNext(2, 429);
    search.failNext(1, 503, { retryAfterSeconds: 3 });
    const statuses: Array<[number, string | undefined]> = [];
    for (let i = 0; i < 4; i++) {
      const res = await get(`${search.url}/search?q=loopback&format=json`);
      statuses.push([res.status, res.headers['retry-after']]);
    }
    expect(statuses).toEqual([
      [429, undefined],
      [429, undefined],
      [503, '3'],
      [200, undefined],
    ]);
    expect(search.requests.slice(-4).map((r) => [r.status, r.params.q, r.headers['user-agent']])).toEqual(Array(4).fill(null).map((_, i) => [statuses[i]![0], 'loopback', USER_AGENT]));
  });

  it('keeps its index until reindex(): a removed page is a stale result answering 410', async () => {
    const world = await new LoopbackWeb({ seed: 3 }).start();
    const engine = await new LoopbackSearch(world).start();
    const worldClient = new OutboundHttpClient({ guard: new TargetGuard({ allowLoopback: true, lookup: world.lookup }), userAgent: USER_AGENT });
    try {
      const page = world.pages('gamma').find((p) => p.path.startsWith('/wiki/'))!;
      world.remove(page.url);
      const stale = engine.answer({ q: page.keyword!, format: 'json' });
      expect(stale.results.map((r) => r.url)).toEqual([page.url]);
      expect((await worldClient.fetch({ url: stale.results[0]!.url })).status).toBe(410);
      engine.reindex();
      expect(engine.answer({ q: page.keyword! }).results).toEqual([]);
    } finally {
      worldClient.close();
      await engine.close();
      await world.close();
    }
  });
});
