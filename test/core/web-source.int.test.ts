import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pdfWithText } from '@lore/extract/scan-pdf';
import { DEFAULT_FILE_READING } from '../../services/core/src/connectors/file-text';
import {
  consume,
  createWebFetcher,
  WebSource,
  type RunOptions,
  type RunOutcome,
  type SourceItem,
  type Validators,
  type WebFetcher,
  type WebSourceConfig,
  type WebSourceOptions,
} from '../../services/core/src/connectors';
import { LORE_AGENT, LoopbackWeb, type SiteName, type WebPage } from '../support/loopback-web';
import { docx } from '../memory/files';

/**
 * The `web` connector source against the loopback world (test/support/loopback-web.ts): single page, recursive
 * crawl and sitemap modes compared with the world's truth, polls that yield nothing for an unchanged site and
 * exactly the changed page otherwise, listings for pruning, the SSRF guard on redirects and on loopback, and the
 * byte, time and document limits, and PDF, DOCX, CSV and JSON files read with the shared extractor. See "Connector
 * sources" in docs/core.md.
 */

type Document = Extract<SourceItem, { kind: 'document' }>;
type Skipped = Extract<SourceItem, { kind: 'skipped' }>;

const HUGE_BYTES = 64 * 1024 * 1024;
const worlds: LoopbackWeb[] = [];
const fetchers: WebFetcher[] = [];

/** A world of its own (tests that change pages must not disturb the others), with small crawl delays. */
async function world(options: ConstructorParameters<typeof LoopbackWeb>[0] = {}): Promise<LoopbackWeb> {
  const web = await new LoopbackWeb({ seed: 11, hugeBytes: HUGE_BYTES, crawlDelaySeconds: { alpha: 0.01, beta: 0.01 }, ...options }).start();
  worlds.push(web);
  return web;
}

/** The outbound trio as docs/outbound.md says to build it for this world: loopback allowed, the world's resolver. */
function fetcherFor(web: LoopbackWeb, allowLoopback = true): WebFetcher {
  const fetcher = createWebFetcher({ allowLoopback, lookup: web.lookup });
  fetchers.push(fetcher);
  return fetcher;
}

function source(web: LoopbackWeb, config: WebSourceConfig, options: WebSourceOptions = {}, fetcher = fetcherFor(web)): WebSource {
  return new WebSource(config, fetcher, { minDelayMs: 0, ...options });
}

interface Collected {
  docs: Document[];
  skipped: Skipped[];
  outcome: RunOutcome;
}

async function collect(run: AsyncGenerator<SourceItem, RunOutcome, undefined>): Promise<Collected> {
  const docs: Document[] = [];
  const skipped: Skipped[] = [];
  const outcome = await consume(run, (item) => {
    if (item.kind === 'document') docs.push(item);
    else skipped.push(item);
  });
  return { docs, skipped, outcome };
}

async function ids(run: AsyncGenerator<string, RunOutcome, undefined>): Promise<{ ids: string[]; outcome: RunOutcome }> {
  const out: string[] = [];
  const outcome = await consume(run, (id) => void out.push(id));
  return { ids: out, outcome };
}

const opts = (limits: RunOptions['limits'] = {}, signal = new AbortController().signal): RunOptions => ({ signal, limits });
const previousOf = (docs: Document[]): Map<string, Validators> => new Map(docs.map((d) => [d.document.id, d.validators]));
const sorted = (values: Iterable<string>) => [...values].sort();
/** What the web source makes documents of: HTML and plain text pages, and the files the shared extractor reads. */
const readable = (p: WebPage) => /^(text\/(html|plain|csv)|application\/(pdf|json)|application\/vnd\.openxmlformats-officedocument\.wordprocessingml\.document)\b/.test(p.contentType);

/** Page requests (not robots.txt, not sitemaps) to a site since the world's requests were cleared. */
function pageRequests(web: LoopbackWeb, site: SiteName) {
  return web.requestsTo(site).filter((r) => r.path !== '/robots.txt' && !/sitemap/.test(r.path));
}

/** What a recursive crawl of `site` must index: reachable, allowed by robots.txt, indexable, not a copy, readable. */
function crawlTruth(web: LoopbackWeb, site: SiteName): string[] {
  return web
    .pages(site)
    .filter((p) => p.reachable && p.robotsAllowed && !p.noindex && readable(p) && (p.canonical === null || p.canonical === p.url))
    .map((p) => p.url);
}

afterAll(async () => {
  for (const f of fetchers) f.close();
  await Promise.all(worlds.map((w) => w.close()));
});

/**
 * A hostile site of a test's own on loopback (a link farm, a huge sitemap): every path asked for is kept in order;
 * robots.txt is absent; `page` answers the rest.
 */
async function ownSite(page: (path: string, origin: string) => { type: string; body: string }): Promise<{ origin: string; requested: string[]; close(): Promise<void> }> {
  const requested: string[] = [];
  let origin = '';
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    requested.push(path);
    if (path === '/robots.txt') return void res.writeHead(404).end();
    const answer = page(path, origin);
    res.writeHead(200, { 'content-type': answer.type }).end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, requested, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('single page', () => {
  it('reads the base URL and nothing else, with its title, text, validators and date, as LoreBot', async () => {
    const web = await world();
    const page = web.page('/docs/page-1.html')!;
    const { docs, skipped, outcome } = await collect(source(web, { base_url: page.url, web_connector_type: 'single' }).loadAll(opts()));
    expect(outcome).toMatchObject({ stop: 'completed', yielded: 1, skipped: 0 });
    expect(skipped).toEqual([]);
    expect(docs).toHaveLength(1);
    const { document, validators, truncated } = docs[0]!;
    expect(document).toMatchObject({ id: page.url, link: page.url, title: page.title, source_type: 'web', primary_owners: null, secondary_owners: null });
    expect(document.text).toContain(page.keyword!);
    expect(document.text).not.toContain('<');
    expect(document.updated_at?.getTime()).toBe(Math.floor(Date.parse(page.lastmod) / 1000) * 1000);
    expect(document.metadata).toMatchObject({ content_type: 'text/html', lang: 'en' });
    expect(document.content_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(validators).toEqual({ etag: page.etag, lastModified: new Date(page.lastmod).toUTCString(), hash: document.content_hash });
    expect(truncated).toBe(false);
    expect(web.requestsTo('alpha').map((r) => r.path)).toEqual(['/robots.txt', '/docs/page-1.html']);
    for (const r of web.requestsTo('alpha')) expect(r.headers['user-agent']).toBe(`${LORE_AGENT}/1`);
  });

  it('reads a plain text page, and a PDF and a JSON file with the shared extractor; skips an image', async () => {
    const web = await world();
    const notes = web.page(web.special.text)!;
    const text = await collect(source(web, { base_url: notes.url, web_connector_type: 'single' }).loadAll(opts()));
    expect(text.docs.map((d) => [d.document.title, d.document.metadata.content_type])).toEqual([['Alpha notes', 'text/plain']]);
    expect(text.docs[0]!.document.text).toContain(notes.keyword!);
    for (const [url, type] of [[web.special.pdf, 'pdf'], [web.special.json, 'json']] as const) {
      const file = web.page(url)!;
      const r = await collect(source(web, { base_url: url, web_connector_type: 'single' }).loadAll(opts()));
      expect(r.outcome).toMatchObject({ stop: 'completed', yielded: 1, skipped: 0 });
      const { document, validators, truncated } = r.docs[0]!;
      expect(document).toMatchObject({ id: url, link: url, title: url.slice(url.lastIndexOf('/') + 1), source_type: 'web' });
      expect(document.metadata).toEqual({ content_type: file.contentType, file_type: type, extractor: type });
      expect(document.text).toContain(file.keyword!);
      expect(document.updated_at?.getTime()).toBe(Math.floor(Date.parse(file.lastmod) / 1000) * 1000);
      expect(validators).toEqual({ etag: file.etag, lastModified: new Date(file.lastmod).toUTCString(), hash: document.content_hash });
      expect(truncated).toBe(false);
    }
    const image = await collect(source(web, { base_url: web.special.image, web_connector_type: 'single' }).loadAll(opts()));
    expect(image.docs).toEqual([]);
    expect(image.skipped.map((s) => [s.reason, s.detail])).toEqual([['unsupported_type', 'image/png']]);
    expect(image.outcome.stop).toBe('completed');
  });

  it('reads DOCX and CSV, a PDF sent as application/octet-stream, and skips a damaged PDF with the extractor\'s reason', async () => {
    const web = await world();
    const alpha = web.siteUrl('alpha');
    const files = {
      docx: web.add(`${alpha}/files/handbook.docx`, await docx(['Field handbook', 'Every cairn gets a brass marker numbered tolvanek.']), {
        contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      }).url,
      csv: web.add(`${alpha}/files/stations.csv`, 'station,marker\nnorth ridge,brevilok\nsouth ford,caspenor\n', { contentType: 'text/csv; charset=utf-8' }).url,
      octet: web.add(`${alpha}/files/survey.pdf`, pdfWithText(['Survey of the lower valley', 'The survey names the marker quendarel.']), { contentType: 'application/octet-stream' }).url,
      damaged: web.add(`${alpha}/files/broken.pdf`, Buffer.from('%PDF-1.4\nthis is not a PDF body at all\n'), { contentType: 'application/pdf' }).url,
    };
    const read = async (url: string) => collect(source(web, { base_url: url, web_connector_type: 'single' }).loadAll(opts()));
    const docxRun = await read(files.docx);
    expect(docxRun.docs[0]!.document.text).toContain('tolvanek');
    expect(docxRun.docs[0]!.document.metadata).toMatchObject({ file_type: 'docx', extractor: 'docx' });
    const csvRun = await read(files.csv);
    expect(csvRun.docs[0]!.document.text).toMatch(/brevilok[\s\S]*caspenor/);
    expect(csvRun.docs[0]!.document.metadata).toMatchObject({ content_type: 'text/csv', file_type: 'csv', extractor: 'csv' });
    const octetRun = await read(files.octet);
    expect(octetRun.docs[0]!.document.text).toContain('quendarel');
    expect(octetRun.docs[0]!.document.metadata).toMatchObject({ content_type: 'application/octet-stream', file_type: 'pdf', extractor: 'pdf' });
    const damagedRun = await read(files.damaged);
    expect(damagedRun.docs).toEqual([]);
    expect(damagedRun.skipped).toEqual([{ kind: 'skipped', ref: files.damaged, reason: 'failed', detail: expect.stringMatching(/PDF/) }]);
    expect(damagedRun.outcome.stop).toBe('completed');
  });

  it('decodes a page whose charset is only in <meta>', async () => {
    const web = await world();
    const page = web.page(web.special.metaCharset)!;
    const { docs } = await collect(source(web, { base_url: page.url, web_connector_type: 'single' }).loadAll(opts()));
    expect(docs[0]!.document.title).toBe('Café crème à la française');
    expect(docs[0]!.document.text).toContain('Déjà vu, été, garçon, où');
  });
});

describe('recursive crawl', () => {
  it("finds exactly the pages the world says are reachable and indexable, and never asks for what robots.txt disallows", async () => {
    const web = await world();
    const { docs, skipped, outcome } = await collect(source(web, { base_url: `${web.siteUrl('alpha')}/`, web_connector_type: 'recursive' }).loadAll(opts()));
    expect(outcome.stop).toBe('completed');
    const truth = crawlTruth(web, 'alpha');
    expect(truth.length).toBeGreaterThan(15);
    expect(sorted(docs.map((d) => d.document.id))).toEqual(sorted(truth));
    // Every document is itself: its own text (the word only it has), not a neighbour's.
    for (const d of docs) {
      const page = web.page(d.document.id)!;
      if (page.keyword) expect([d.document.id, d.document.text.includes(page.keyword)]).toEqual([d.document.id, true]);
    }
    const paths = web.requestsTo('alpha').map((r) => r.path);
    expect(paths.filter((p) => p.startsWith('/private/secret') || p.includes('sessionid='))).toEqual([]);
    expect(paths).toContain('/private/open.html');
    // noindex pages are read (their links count) but are no documents; a nofollow page's links are not followed.
    expect(docs.map((d) => d.document.id)).not.toContain(web.special.noindex);
    expect(docs.map((d) => d.document.id)).not.toContain(web.special.headerNoindex);
    expect(paths.filter((p) => p.startsWith('/meta/behind-noindex') || p.startsWith('/meta/only-nofollow'))).toEqual([]);
    // Files the source does not read, announced by their extension, are not fetched at all; a PDF and JSON are read.
    expect(paths.filter((p) => /\.png$/.test(p))).toEqual([]);
    expect(docs.map((d) => d.document.id)).toEqual(expect.arrayContaining([web.special.pdf, web.special.json]));
    // Other sites of the world are other origins: not one request.
    for (const site of ['beta', 'gamma', 'delta'] as const) expect(web.requestsTo(site)).toEqual([]);
    const reasons = (ref: string) => skipped.filter((s) => s.ref === ref).map((s) => s.reason);
    expect(reasons(web.special.disallowed)).toEqual(['robots']);
    expect(reasons(web.special.noindex)).toEqual(['noindex']);
    expect(reasons(web.special.headerNoindex)).toEqual(['noindex']);
    expect(reasons(web.special.print)).toEqual(['duplicate']);
    expect(reasons(web.special.gone)).toEqual(['not_found']);
    expect(reasons(web.special.redirectLoop)).toEqual(['failed']);
    // The metadata redirect linked from the odd-links page is refused by the guard, and the crawl goes on.
    expect(skipped.filter((s) => s.ref === web.special.redirectMetadata).map((s) => [s.reason, s.detail])).toEqual([['failed', 'refused']]);
  });

  it('reads a wiki without robots.txt or sitemap: extension-less and non-ASCII paths, query-string pagination', async () => {
    const web = await world();
    const { docs, outcome } = await collect(source(web, { base_url: web.siteUrl('gamma'), web_connector_type: 'recursive' }).loadAll(opts()));
    expect(outcome.stop).toBe('completed');
    expect(sorted(docs.map((d) => d.document.id))).toEqual(sorted(crawlTruth(web, 'gamma')));
    expect(docs.map((d) => d.document.id)).toContain(`${web.siteUrl('gamma')}/wiki/Caf%C3%A9`);
    expect(docs.map((d) => d.document.id)).toContain(`${web.siteUrl('gamma')}/list?page=3`);
  });

  it('stops at the depth limit, the document limit and the page limit, and says which', async () => {
    const web = await world();
    const base = `${web.siteUrl('alpha')}/`;
    const shallow = await collect(source(web, { base_url: base, web_connector_type: 'recursive' }, { maxDepth: 1 }).loadAll(opts()));
    // Depth 1: the home page's links, where they lead (the old address of page 3 redirects to it) and what they
    // stand for (the print copy's canonical link is page 2); nothing further (page 4 and on are deeper).
    const depthOne = new Set([base, ...web.page(base)!.links.map((l) => l.url), web.page('/docs/page-3.html')!.url, web.page('/docs/page-2.html')!.url]);
    expect(shallow.outcome.stop).toBe('completed');
    expect(sorted(shallow.docs.map((d) => d.document.id))).toEqual(sorted(crawlTruth(web, 'alpha').filter((url) => depthOne.has(url))));
    expect(shallow.docs.map((d) => d.document.id)).not.toContain(web.page('/docs/page-4.html')!.url);

    const three = await collect(source(web, { base_url: base, web_connector_type: 'recursive' }).loadAll(opts({ maxDocuments: 3 })));
    expect(three.docs).toHaveLength(3);
    expect(three.outcome).toMatchObject({ stop: 'max_documents', yielded: 3 });

    web.clearRequests();
    const pages = await collect(source(web, { base_url: base, web_connector_type: 'recursive' }, { maxPages: 4 }).loadAll(opts()));
    expect(pages.outcome).toMatchObject({ stop: 'max_pages', requests: 4 });
    expect(pageRequests(web, 'alpha')).toHaveLength(4);
  });

  it('keeps at most maxQueued URLs waiting on a link farm: the rest are dropped, never read, and the run ends with max_pages', async () => {
    // Every page links to 50 new pages (a link farm, an endless calendar): unbounded, the queue grows by 49 a page.
    const farm = await ownSite((path) => {
      const prefix = path === '/' ? '/p' : path;
      const links = Array.from({ length: 50 }, (_, i) => `<a href="${prefix}-${i + 1}">link ${i + 1}</a>`).join(' ');
      return { type: 'text/html; charset=utf-8', body: `<html><head><title>${path}</title></head><body><p>Farm page ${path}.</p>${links}</body></html>` };
    });
    try {
      const fetcher = createWebFetcher({ allowLoopback: true });
      fetchers.push(fetcher);
      const run = await collect(new WebSource({ base_url: `${farm.origin}/`, web_connector_type: 'recursive' }, fetcher, { minDelayMs: 0, maxPages: 20, maxQueued: 5, concurrency: 1 }).loadAll(opts()));
      expect(run.outcome).toMatchObject({ stop: 'max_pages' });
      // Breadth first: the home page's first five links were queued and read, its sixth was dropped and never asked for.
      const pages = farm.requested.filter((p) => p !== '/robots.txt');
      expect(pages.slice(0, 6)).toEqual(['/', '/p-1', '/p-2', '/p-3', '/p-4', '/p-5']);
      expect(pages).not.toContain('/p-6');
      expect(pages.length).toBeLessThanOrEqual(20);
    } finally {
      await farm.close();
    }
  });

  it('keeps at most maxQueued URLs of its sitemaps: a load reads that many and ends with max_pages, a listing fails', async () => {
    const site = await ownSite((path, origin) =>
      path === '/sitemap.xml'
        ? { type: 'application/xml', body: `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${Array.from({ length: 30 }, (_, i) => `<url><loc>${origin}/s-${i + 1}</loc></url>`).join('')}</urlset>` }
        : { type: 'text/html; charset=utf-8', body: `<html><head><title>${path}</title></head><body><p>Listed page ${path}.</p></body></html>` },
    );
    try {
      const fetcher = createWebFetcher({ allowLoopback: true });
      fetchers.push(fetcher);
      const web = new WebSource({ base_url: `${site.origin}/sitemap.xml`, web_connector_type: 'sitemap' }, fetcher, { minDelayMs: 0, maxPages: 100, maxQueued: 5, concurrency: 1 });
      const run = await collect(web.loadAll(opts()));
      expect(run.outcome.stop).toBe('max_pages');
      expect(run.docs.map((d) => new URL(d.document.id).pathname)).toEqual(['/s-1', '/s-2', '/s-3', '/s-4', '/s-5']);
      expect(site.requested).not.toContain('/s-6');
      const listing = await consume(web.listIds({ signal: new AbortController().signal, limits: {} }), () => undefined);
      expect(listing.stop).toBe('failed');
      expect(listing.detail).toMatch(/more than 5 URLs/);
    } finally {
      await site.close();
    }
  });

  it('refuses a site whose robots.txt answers 500, without asking for a page', async () => {
    const web = await world();
    const { docs, outcome } = await collect(source(web, { base_url: web.siteUrl('delta'), web_connector_type: 'recursive' }).loadAll(opts()));
    expect(docs).toEqual([]);
    expect(outcome.stop).toBe('failed');
    expect(outcome.detail).toMatch(/robots\.txt/);
    expect(web.requestsTo('delta').map((r) => r.path)).toEqual(['/robots.txt']);
  });
});

describe('sitemap mode', () => {
  it("reads the pages of the sitemap robots.txt names, lastmod as updated_at, the orphan included", async () => {
    const web = await world();
    const { docs, outcome } = await collect(source(web, { base_url: web.siteUrl('alpha'), web_connector_type: 'sitemap' }).loadAll(opts()));
    expect(outcome.stop).toBe('completed');
    const listed = web.pages('alpha').filter((p) => p.inSitemap && p.robotsAllowed);
    const truth = listed.filter((p) => readable(p) && !p.noindex);
    expect(sorted(docs.map((d) => d.document.id))).toEqual(sorted(truth.map((p) => p.url)));
    expect(docs.map((d) => d.document.id)).toContain(web.special.orphan);
    for (const d of docs) expect([d.document.id, d.document.updated_at?.toISOString()]).toEqual([d.document.id, web.page(d.document.id)!.lastmod]);
    // The PDF the sitemap lists is a document, read with the shared extractor.
    expect(docs.find((d) => d.document.id === web.special.pdf)?.document.text).toContain(web.page(web.special.pdf)!.keyword!);
    // A sitemap-only run follows no links: nothing outside the sitemap was asked for.
    const listedPaths = new Set(listed.map((p) => p.path));
    expect(pageRequests(web, 'alpha').filter((r) => !listedPaths.has(r.path))).toEqual([]);
  });

  it('follows a sitemap index to its children (beta), keeping each post’s lastmod', async () => {
    const web = await world();
    const { docs, outcome } = await collect(source(web, { base_url: `${web.siteUrl('beta')}/sitemap.xml`, web_connector_type: 'sitemap' }).loadAll(opts()));
    expect(outcome.stop).toBe('completed');
    const truth = web.pages('beta').filter((p) => p.inSitemap);
    expect(truth.some((p) => p.path.startsWith('/posts/'))).toBe(true);
    expect(sorted(docs.map((d) => d.document.id))).toEqual(sorted(truth.map((p) => p.url)));
    for (const d of docs) expect(d.document.updated_at?.toISOString()).toBe(web.page(d.document.id)!.lastmod);
    expect(web.requestsTo('beta').map((r) => r.path)).toEqual(expect.arrayContaining(['/sitemap.xml', '/sitemaps/posts.xml', '/sitemaps/pages.xml']));
  });

  it("spaces its requests by the site's Crawl-delay", async () => {
    const web = await world({ crawlDelaySeconds: { beta: 0.2 } });
    const { docs } = await collect(source(web, { base_url: web.siteUrl('beta'), web_connector_type: 'sitemap' }).loadAll(opts()));
    expect(docs.length).toBeGreaterThan(8);
    // Requests are spaced when they start; the world sees them arrive, a connection set-up later or sooner.
    const times = web.requestsTo('beta').filter((r) => r.path !== '/robots.txt').map((r) => r.time);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(160);
    expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(195 * gaps.length);
  });
});

describe('polling', () => {
  const changed = '<!doctype html><html lang="en"><head><title>Page three, rewritten</title></head><body><p>Rewritten with the word quorvex.</p></body></html>';

  it('recursive: an unchanged site yields nothing (every known page answers 304); one changed page yields exactly that page', async () => {
    const web = await world();
    const src = source(web, { base_url: `${web.siteUrl('alpha')}/`, web_connector_type: 'recursive' });
    const load = await collect(src.loadAll(opts()));
    const previous = previousOf(load.docs);
    const since = new Date();
    web.clearRequests();
    const quiet = await collect(src.pollSince(since, previous, opts()));
    expect(quiet.docs).toEqual([]);
    expect(quiet.outcome).toMatchObject({ stop: 'completed', yielded: 0, unchanged: previous.size });
    const asked = pageRequests(web, 'alpha');
    expect(asked.length).toBe(previous.size);
    for (const r of asked) expect([r.path, r.status, typeof r.headers['if-none-match']]).toEqual([r.path, 304, 'string']);

    const target = web.page('/docs/page-3.html')!;
    web.change(target.url, changed);
    const after = await collect(src.pollSince(since, previous, opts()));
    expect(after.docs.map((d) => d.document.id)).toEqual([target.url]);
    expect(after.docs[0]!.document).toMatchObject({ title: 'Page three, rewritten' });
    expect(after.docs[0]!.document.text).toContain('quorvex');
    expect(after.docs[0]!.validators.etag).toBe(web.page(target.url)!.etag);
    expect(after.outcome).toMatchObject({ stop: 'completed', yielded: 1, unchanged: previous.size - 1 });
  });

  it('sitemap: an unchanged site costs no page request at all; a changed lastmod costs one', async () => {
    const web = await world();
    const src = source(web, { base_url: web.siteUrl('alpha'), web_connector_type: 'sitemap' });
    const load = await collect(src.loadAll(opts()));
    const previous = previousOf(load.docs);
    // The last run is "now" on our clock, months after the world's dates: the site's own clock decides.
    const since = new Date();
    web.clearRequests();
    const quiet = await collect(src.pollSince(since, previous, opts()));
    expect(quiet.docs).toEqual([]);
    expect(quiet.outcome).toMatchObject({ stop: 'completed', unchanged: previous.size });
    expect(pageRequests(web, 'alpha')).toEqual([]);
    expect(web.requestsTo('alpha').map((r) => r.path)).toEqual(['/sitemap.xml']);

    const target = web.page('/about.html')!;
    web.change(target.url, changed);
    web.clearRequests();
    const after = await collect(src.pollSince(since, previous, opts()));
    expect(after.docs.map((d) => d.document.id)).toEqual([target.url]);
    expect(after.docs[0]!.document.updated_at?.toISOString()).toBe(web.page(target.url)!.lastmod);
    expect(pageRequests(web, 'alpha').map((r) => [r.path, r.status])).toEqual([['/about.html', 200]]);
  });

  it('single: 304 is nothing to re-index; a change is the page', async () => {
    const web = await world();
    const target = web.page('/docs/page-4.html')!;
    const src = source(web, { base_url: target.url, web_connector_type: 'single' });
    const previous = previousOf((await collect(src.loadAll(opts()))).docs);
    const quiet = await collect(src.pollSince(new Date(), previous, opts()));
    expect([quiet.docs.length, quiet.outcome.unchanged]).toEqual([0, 1]);
    web.change(target.url, changed);
    const after = await collect(src.pollSince(new Date(), previous, opts()));
    expect(after.docs.map((d) => d.document.title)).toEqual(['Page three, rewritten']);
  });
});

describe('listing ids for pruning', () => {
  it('recursive: lists what a load indexes, and no longer a page that answers 410 or 404', async () => {
    const web = await world();
    const src = source(web, { base_url: `${web.siteUrl('alpha')}/`, web_connector_type: 'recursive' });
    const load = await collect(src.loadAll(opts()));
    const before = await ids(src.listIds(opts()));
    expect(before.outcome.stop).toBe('completed');
    expect(sorted(before.ids)).toEqual(sorted(load.docs.map((d) => d.document.id)));

    const gone = web.page('/docs/page-5.html')!.url;
    const missing = web.page('/about.html')!.url;
    web.remove(gone);
    web.remove(missing, 404);
    const after = await ids(src.listIds({ ...opts(), previous: previousOf(load.docs) }));
    expect(after.outcome.stop).toBe('completed');
    expect(sorted(after.ids)).toEqual(sorted(before.ids.filter((id) => id !== gone && id !== missing)));
    // The pages were asked for (other pages still link them) and answered so.
    expect(web.requestsTo('alpha', '/docs/page-5.html').at(-1)!.status).toBe(410);
    expect(web.requestsTo('alpha', '/about.html').at(-1)!.status).toBe(404);
  });

  it('recursive: a page that is down for now is listed, and so is what only it links to (asked for directly)', async () => {
    const web = await world();
    const alpha = web.siteUrl('alpha');
    const leaf = web.add(`${alpha}/extra/leaf.html`, '<html><head><title>A leaf</title></head><body><p>Only the about page links here.</p></body></html>').url;
    const about = web.change(`${alpha}/about.html`, `<html><head><title>About, with a leaf</title></head><body><a href="/">Home</a> <a href="/extra/leaf.html">Leaf</a></body></html>`).url;
    const src = source(web, { base_url: `${alpha}/`, web_connector_type: 'recursive' });
    const load = await collect(src.loadAll(opts()));
    expect(load.docs.map((d) => d.document.id)).toEqual(expect.arrayContaining([leaf, about]));

    web.outage(about);
    const blind = await ids(src.listIds(opts()));
    expect(blind.ids).toContain(about);
    expect(blind.ids).not.toContain(leaf);
    web.clearRequests();
    const listed = await ids(src.listIds({ ...opts(), previous: previousOf(load.docs) }));
    expect(listed.outcome.stop).toBe('completed');
    expect(sorted(listed.ids)).toEqual(sorted(load.docs.map((d) => d.document.id)));
    const asked = web.requestsTo('alpha', '/extra/leaf.html');
    expect(asked.map((r) => [r.status, typeof r.headers['if-none-match']])).toEqual([[304, 'string']]);
  });

  it('single and sitemap: a removed page is not listed; sitemap listings fetch no page', async () => {
    const web = await world();
    const page = web.page('/docs/page-8.html')!;
    const single = source(web, { base_url: page.url, web_connector_type: 'single' });
    const previous = previousOf((await collect(single.loadAll(opts()))).docs);
    expect((await ids(single.listIds({ ...opts(), previous }))).ids).toEqual([page.url]);

    const sitemap = source(web, { base_url: web.siteUrl('alpha'), web_connector_type: 'sitemap' });
    web.clearRequests();
    const listed = await ids(sitemap.listIds(opts()));
    expect(listed.ids).toContain(page.url);
    expect(pageRequests(web, 'alpha')).toEqual([]);

    web.remove(page.url);
    const singleAfter = await ids(single.listIds({ ...opts(), previous }));
    expect(singleAfter).toMatchObject({ ids: [], outcome: { stop: 'completed' } });
    const sitemapAfter = await ids(sitemap.listIds(opts()));
    expect(sitemapAfter.outcome.stop).toBe('completed');
    expect(sorted(sitemapAfter.ids)).toEqual(sorted(listed.ids.filter((id) => id !== page.url)));
  });

  it('a listing of a site that cannot be read fails instead of listing nothing', async () => {
    const web = await world();
    const delta = await ids(source(web, { base_url: web.siteUrl('delta'), web_connector_type: 'sitemap' }).listIds(opts()));
    expect(delta).toMatchObject({ ids: [], outcome: { stop: 'failed' } });
    const noSitemap = await ids(source(web, { base_url: web.siteUrl('gamma'), web_connector_type: 'sitemap' }).listIds(opts()));
    expect(noSitemap).toMatchObject({ ids: [], outcome: { stop: 'failed', detail: 'no sitemap could be read' } });
  });
});

describe('the SSRF guard', () => {
  it('refuses redirects to the metadata address and to a private address, before connecting', async () => {
    const web = await world();
    for (const url of [web.special.redirectMetadata, web.special.redirectPrivate]) {
      const { docs, outcome } = await collect(source(web, { base_url: url, web_connector_type: 'single' }).loadAll(opts()));
      expect(docs).toEqual([]);
      expect(outcome).toMatchObject({ stop: 'failed', detail: 'the base URL could not be fetched (refused)' });
    }
  });

  it('refuses private and metadata addresses as base URLs even with loopback allowed', async () => {
    const web = await world();
    for (const url of ['http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data/', 'http://192.168.1.1/']) {
      const { outcome } = await collect(source(web, { base_url: url, web_connector_type: 'recursive' }).loadAll(opts()));
      expect([url, outcome.stop, outcome.detail]).toEqual([url, 'failed', expect.stringMatching(/^the base URL is refused: IPv4 \w+ address is not allowed$/)]);
    }
  });

  it('refuses loopback targets unless allowLoopback is on (it is off by default), sending nothing', async () => {
    const web = await world();
    const closed = fetcherFor(web, false);
    for (const url of [web.siteUrl('alpha'), web.url, `http://127.0.0.1:${web.port}/`]) {
      for (const mode of ['single', 'recursive', 'sitemap'] as const) {
        const { docs, outcome } = await collect(source(web, { base_url: url, web_connector_type: mode }, {}, closed).loadAll(opts()));
        expect(docs).toEqual([]);
        expect([url, mode, outcome.stop, outcome.detail]).toEqual([url, mode, 'failed', expect.stringMatching(/^the base URL is refused: (host names under \.localhost are local|IPv4 loopback is not allowed)$/)]);
      }
    }
    const byDefault = createWebFetcher({ lookup: web.lookup });
    fetchers.push(byDefault);
    const r = await collect(source(web, { base_url: web.siteUrl('alpha'), web_connector_type: 'single' }, {}, byDefault).loadAll(opts()));
    expect(r.outcome.stop).toBe('failed');
    expect(web.requests).toEqual([]);
  });
});

describe('limits', () => {
  it('cuts the huge page at the byte limit, and the world stops writing it', async () => {
    const web = await world();
    const limit = 256 * 1024;
    const { docs, outcome } = await collect(source(web, { base_url: web.special.huge, web_connector_type: 'single' }).loadAll(opts({ maxDocumentBytes: limit })));
    expect(outcome.stop).toBe('completed');
    expect(docs).toHaveLength(1);
    expect(docs[0]!.truncated).toBe(true);
    expect(docs[0]!.document).toMatchObject({ title: 'A huge page', metadata: { truncated: 'true' } });
    expect(Buffer.byteLength(docs[0]!.document.text)).toBeLessThanOrEqual(limit);
    expect(docs[0]!.document.text.length).toBeGreaterThan(limit / 4);
    await web.idle();
    const huge = web.requestsTo('alpha', '/huge.html');
    expect(huge).toHaveLength(1);
    expect(huge[0]!.bytesSent).toBeLessThan(HUGE_BYTES / 8);
  });

  it('reads a PDF whole up to the extractor\'s file limit, its text cut at the document limit; a larger one is too_large', async () => {
    const web = await world();
    const lines = Array.from({ length: 40 }, (_, i) => `Line ${i} of the long report about the marker vandreloth.`);
    const long = web.add(`${web.siteUrl('alpha')}/files/long.pdf`, pdfWithText(lines), { contentType: 'application/pdf' });
    const pdfBytes = long.body.length;
    const single = (options: WebSourceOptions, maxDocumentBytes: number) =>
      collect(source(web, { base_url: long.url, web_connector_type: 'single' }, options).loadAll(opts({ maxDocumentBytes })));
    // A document limit below the PDF's size: the file is still read whole (a cut PDF is no PDF), its text cut.
    const cut = await single({}, 300);
    expect(pdfBytes).toBeGreaterThan(300);
    expect(cut.docs).toHaveLength(1);
    expect(cut.docs[0]!.truncated).toBe(true);
    expect(cut.docs[0]!.document.metadata.truncated).toBe('true');
    expect(cut.docs[0]!.document.text).toContain('Line 0 of the long report');
    expect(Buffer.byteLength(cut.docs[0]!.document.text)).toBeLessThanOrEqual(300);
    // A file limit below its size: skipped as too_large (its declared length says so before the body is read).
    const small = { reading: { ...DEFAULT_FILE_READING, maxFileBytes: pdfBytes - 1 } };
    const refused = await single(small, 5 * 1024 * 1024);
    expect(refused.docs).toEqual([]);
    expect(refused.skipped.map((s) => [s.reason, s.detail])).toEqual([['too_large', `larger than ${pdfBytes - 1} bytes`]]);
    // An HTML page under the same small file limit is read as before: the file limit is for files.
    const page = web.page('/docs/page-1.html')!;
    const html = await collect(source(web, { base_url: page.url, web_connector_type: 'single' }, small).loadAll(opts()));
    expect(html.docs.map((d) => d.document.title)).toEqual([page.title]);
  });

  it('stops at the time limit in the middle of the slow page, and drops its connection', async () => {
    const web = await world({ slow: { totalMs: 6000, chunks: 12 } });
    const started = performance.now();
    const { docs, outcome } = await collect(source(web, { base_url: web.special.slow, web_connector_type: 'single' }).loadAll(opts({ maxTotalMs: 1000 })));
    const elapsed = performance.now() - started;
    expect(docs).toEqual([]);
    expect(outcome.stop).toBe('max_time');
    expect(elapsed).toBeGreaterThanOrEqual(950);
    expect(elapsed).toBeLessThan(2500);
    await web.idle();
    expect(web.requestsTo('alpha', '/slow.html')[0]!.done).toBe(true);
  });

  it("stops when the caller's signal aborts", async () => {
    const web = await world({ slow: { totalMs: 6000, chunks: 12 } });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const started = performance.now();
    const { outcome } = await collect(source(web, { base_url: web.special.slow, web_connector_type: 'single' }).loadAll(opts({}, controller.signal)));
    expect(outcome.stop).toBe('aborted');
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
