import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32, deflateSync } from 'node:zlib';

/**
 * The test world's web: one `node:http` server on 127.0.0.1 (random port) serving a small generated set of sites
 * for the crawler, the `web` connector source, web research and company overview. See "The loopback test world" in
 * docs/outbound.md.
 *
 * **Sites are told apart by the `Host` header**, not by path prefix, so each is its own origin with its own
 * robots.txt and sitemap: `http://<site>.localhost:<port>` for `alpha`, `beta`, `gamma` and `delta`. Those names
 * do not resolve through the system resolver, so a guard is built with the world's resolver:
 * `new TargetGuard({ allowLoopback: true, lookup: web.lookup })` (it answers 127.0.0.1 for the world's names and
 * ENOTFOUND for everything else, so an off-site link fails fast as `refused`). `http://127.0.0.1:<port>` (`web.url`)
 * is the hub: an index page linking every site's home page and an empty robots.txt; any other Host answers 421.
 *
 * - `alpha` (documentation): robots.txt with a `LoreBot` group (Allow inside a Disallow, a `/*?sessionid=`
 *   wildcard, Crawl-delay), a shut-out agent and a stricter `*` group; a plain sitemap (lastmod, and one orphan
 *   page reachable only through it); relative, root-relative, absolute, fragment and query-string links, links to
 *   other sites and off-site (example.com); a page of odd links (broken, gone, mailto, javascript, protocol-relative,
 *   unquoted, a redirect loop, a redirect to the metadata address); every redirect status (301, 302, 307, 308), a
 *   chain, a loop, redirects to 169.254.169.254, to 10.0.0.1 and off-world; 404 and 410; a slow page (headers,
 *   then the body trickled over `slow.totalMs`); a huge page streamed with back-pressure (`hugeBytes`, chunked) and
 *   one declaring its Content-Length; PDF, plain text, JSON and PNG files; `<meta name="robots"
 *   content="noindex,nofollow">`, `rel="nofollow"` links and an `X-Robots-Tag: noindex` header; a print copy with a
 *   canonical link; ISO-8859-1 pages (declared in the header, or only in `<meta charset>`) and a UTF-8 one.
 * - `beta` (blog): robots.txt with one `*` group (Disallow /drafts/, Crawl-delay) and a sitemap index pointing at
 *   two child sitemaps (posts, pages); posts with publication dates and authors spread over the last year.
 * - `gamma` (wiki): no robots.txt (404) and no sitemap; extension-less paths, a non-ASCII path, `text/html`
 *   without a charset, a paginated list reached through query-only links (`?page=2`).
 * - `delta`: robots.txt answers 500 (RFC 9309: the whole site is disallowed), although it has a sitemap.
 * - Only with `generatedPages: N` (default 0, none): a larger documentation section on alpha for benchmarks,
 *   `/generated/` (an index linking one section page per 25 pages, `/generated/s<k>/`, each linking its pages
 *   `/generated/s<k>/page-<j>.html`), N pages of several paragraphs with their own keyword linking their section,
 *   neighbours, two other generated pages, alpha's home (out of the section) and now and then off-site; all listed in
 *   their own sitemap, `/generated/sitemap.xml` (not in alpha's robots.txt or its main sitemap). Nothing of alpha
 *   links into the section, and it is drawn from its own numbers, so every other page is the same with or without it.
 * - Only with `extraSites` (default none): sites of the caller's making, each `http://<name>.localhost:<port>` with
 *   the HTML pages given, a robots.txt and a sitemap, listed by `pages()` after the four (the agents test world).
 *
 * Pages are generated deterministically from `seed` (titles, text, each page's unique `keyword`, the links among
 * pages); the special paths above are the same in every world (`SPECIAL_PATHS`, and `web.special` as URLs). The
 * slow and huge pages and most redirects are linked from nowhere: a crawl meets them only when a test sends it
 * there (the odd-links page does link the broken link, the gone page, the loop and the metadata redirect).
 * robots.txt rules are written for the product token `LoreBot` (`LORE_AGENT`). Every document answers with an
 * ETag and Last-Modified and a 304 to a matching If-None-Match (which wins) or If-Modified-Since. Dates come from
 * the world clock (`web.now()`, starting at `epoch`), which each mutation moves on by an hour: `change`, `remove`
 * and `add` update the page, its lastmod and the sitemaps that list it; `outage(url, status)` makes a path answer
 * 503 (or another status) until `restore(url)`, its document kept (a page down for a while, not gone; the clock
 * does not move). `pages(site)` is the truth a crawl is
 * compared with (`page(url)` for one); `requests` records every request (method, host, path, headers, time, status,
 * body bytes sent, done), and `idle()` waits until no response is being written (a dropped huge page has stopped).
 */

export const SITE_NAMES = ['alpha', 'beta', 'gamma', 'delta'] as const;
export type SiteName = (typeof SITE_NAMES)[number];
/** A site of the world: one of `SITE_NAMES`, or the name of one of the `extraSites` it was started with. */
export type WorldSite = SiteName | (string & {});

/** The product token robots.txt rules of the world are written for (what Lore's fetchers send). */
export const LORE_AGENT = 'LoreBot';

export interface LoopbackWebOptions {
  /** Drives titles, text, keywords and links; the same seed builds the same world. Default 1. */
  seed?: number;
  /** Start of the world clock (lastmod values, Last-Modified, publication dates). Default 2026-03-02T09:00:00Z. */
  epoch?: Date | number;
  /** The slow page: headers at once, then `chunks` pieces of body spread over `totalMs`. Default 3000 ms, 6. */
  slow?: { totalMs?: number; chunks?: number };
  /** Size of the huge pages. Default 256 MiB: more than any sane limit, and never held in memory. */
  hugeBytes?: number;
  /** Crawl-delay (seconds) of alpha's LoreBot group and of beta's `*` group. Defaults 0.25 and 1. */
  crawlDelaySeconds?: { alpha?: number; beta?: number };
  /**
   * Pages of alpha's generated section (`/generated/`, its own sitemap `/generated/sitemap.xml`), for benchmarks
   * that need a site of a realistic size. Default 0: no section, the world exactly as without the option.
   */
  generatedPages?: number;
  /**
   * More sites, each its own origin `http://<name>.localhost:<port>` with the pages given (HTML, all in its
   * sitemap), a robots.txt (`User-agent: *`, a `Disallow:` line per `disallow` prefix, its `Sitemap:`) and a
   * sitemap at `/sitemap.xml`. Built after everything else and from no draw of the world's, so every other site is
   * the same with or without them; `pages()` (and so the search index) lists them after the four. Default none.
   * The agents test world (agents-world.ts) serves its companies this way.
   */
  extraSites?: ExtraSite[];
}

export interface ExtraSite {
  /** Host label: lower-case letters, digits and hyphens, not one of `SITE_NAMES`, unique. */
  name: string;
  pages: Array<{ path: string; html: string; /** Days before the epoch it was last modified. Default 30. */ ageDays?: number }>;
  /** Path prefixes robots.txt disallows for every agent. Default none. */
  disallow?: string[];
}

export interface WebLink {
  /** Absolute, fragment removed (as a crawler would queue it). Only http(s) links are listed. */
  url: string;
  /** `rel` contains `nofollow`. */
  nofollow: boolean;
}

/** One document of the world as a crawl should find it. */
export interface WebPage {
  site: WorldSite;
  url: string;
  /** Path and query, as requested. */
  path: string;
  title: string;
  /** The Content-Type header as served. */
  contentType: string;
  /** The page's language (`<html lang>`), `en` for files. */
  lang: string;
  /** A word that appears on this page only (null for the PNG and for pages a test added or changed). */
  keyword: string | null;
  /** The visible text (HTML without tags and head; the text of a file), decoded. */
  text: string;
  /** The served bytes. */
  body: Buffer;
  /** ISO 8601, the Last-Modified of the page and its sitemap lastmod. */
  lastmod: string;
  etag: string;
  /** Blog posts: ISO 8601 publication date and author. */
  publishedDate: string | null;
  author: string | null;
  /** Listed in its site's sitemap (or one of the sitemap index's children). */
  inSitemap: boolean;
  /** robots.txt lets `LoreBot` fetch it (false for every page of delta: its robots.txt answers 500). */
  robotsAllowed: boolean;
  /** `<meta name="robots">` or `X-Robots-Tag` says noindex / nofollow. */
  noindex: boolean;
  nofollow: boolean;
  /** `<link rel="canonical">` (absolute), or null. */
  canonical: string | null;
  links: WebLink[];
  /** Reachable from the site's home page through followable links of the site (redirects followed, robots ignored). */
  reachable: boolean;
}

export interface WebRequest {
  method: string;
  /** The Host header as sent. */
  host: string;
  site: WorldSite | 'hub' | null;
  /** Path and query as sent. */
  path: string;
  headers: IncomingHttpHeaders;
  /** Epoch milliseconds (sub-millisecond precision) when the request arrived. */
  time: number;
  /** 0 until answered. */
  status: number;
  /** Body bytes written so far (a huge page stops growing when the client drops the connection). */
  bytesSent: number;
  /** The response is over: sent in full, or its connection closed. */
  done: boolean;
}

interface Doc {
  kind: 'doc';
  contentType: string;
  body: Buffer;
  lastmod: number;
  etag: string;
  title: string;
  lang: string;
  keyword: string | null;
  text: string;
  publishedDate: number | null;
  author: string | null;
  /** Sitemap it is listed in (alpha: 'main'; beta: 'posts' or 'pages'), or null. */
  sitemap: string | null;
  headers: Record<string, string>;
  noindex: boolean;
  nofollow: boolean;
  canonical: string | null;
  links: WebLink[];
}

interface Redirect {
  kind: 'redirect';
  status: 301 | 302 | 307 | 308;
  location: string;
}

interface Gone {
  kind: 'gone';
  status: 404 | 410;
}

interface Special {
  kind: 'special';
  serve(req: IncomingMessage, res: ServerResponse, rec: WebRequest): void;
}

type Resource = Doc | Redirect | Gone | Special;

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const DEFAULT_EPOCH = Date.UTC(2026, 2, 2, 9, 0, 0);
const HTML = 'text/html; charset=utf-8';

/** Age in days of beta's posts at the epoch: at least one inside each SearXNG time range, and older ones. */
const POST_AGES_DAYS = [0.5, 3, 10, 20, 45, 100, 200, 400];

const VOCABULARY = [
  'lantern', 'harbor', 'copper', 'meadow', 'archive', 'glacier', 'orchard', 'compass', 'falcon', 'ember',
  'quarry', 'willow', 'beacon', 'canyon', 'ledger', 'prism', 'saffron', 'tundra', 'velvet', 'zephyr',
  'atlas', 'basalt', 'cobalt', 'fjord', 'garnet', 'heron', 'indigo', 'juniper', 'kestrel', 'lagoon',
  'marble', 'nectar', 'obsidian', 'pepper', 'quartz', 'raven', 'sierra', 'timber', 'umber', 'vessel',
  'walnut', 'yarrow', 'anchor', 'bramble', 'cinder', 'dune', 'estuary', 'fennel', 'granite', 'hollow',
  'island', 'jasper', 'kelp', 'lichen', 'mantle', 'nettle', 'oasis', 'pebble', 'reef', 'spruce',
  'thistle', 'valley', 'wharf', 'crystal',
];
const VERBS = ['guides', 'shelters', 'measures', 'follows', 'records', 'outlasts', 'frames', 'carries', 'echoes', 'warms'];

/** Deterministic numbers from a seed: each draw hashes the seed and a counter. */
class Draw {
  private n = 0;
  constructor(private readonly seed: number | string) {}
  next(): number {
    const h = createHash('sha256').update(`${this.seed}:${this.n++}`).digest();
    return h.readUInt32BE(0) / 0x1_0000_0000;
  }
  int(below: number): number {
    return Math.floor(this.next() * below);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  shuffled<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }
}

export class LoopbackWeb {
  server!: Server;
  /** The hub, `http://127.0.0.1:<port>`. */
  url = '';
  port = 0;
  readonly requests: WebRequest[] = [];
  /** The slow page's trickle; may be changed between requests. */
  slow: { totalMs: number; chunks: number };
  /** How long every answer waits before it starts (a remote site's round trip, for benchmarks); 0 by default. */
  latencyMs = 0;
  readonly hugeBytes: number;
  /** Absolute URLs of the special paths (set by `start`). */
  special!: Record<SpecialName, string>;
  /** Resolves the world's host names to 127.0.0.1, anything else fails as getaddrinfo does (a `HostLookup`). */
  readonly lookup = async (hostname: string): Promise<Array<{ address: string; family: 4 | 6 }>> => {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || this.siteOfHost(name) !== null) return [{ address: '127.0.0.1', family: 4 }];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  };

  private readonly seed: number;
  private clock: number;
  private readonly epoch: number;
  private readonly crawlDelay: { alpha: number; beta: number };
  private readonly generatedPages: number;
  private readonly sites = new Map<WorldSite, Map<string, Resource>>();
  private readonly extraSites: ExtraSite[];
  /** When each sitemap last lost an entry (site/name), so its lastmod moves on removals too. */
  private readonly sitemapChanged = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Paths answering an error for now (`outage`), by site and path. */
  private readonly outages = new Map<string, number>();
  private readonly delays = new Map<string, number>();
  private open = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(options: LoopbackWebOptions = {}) {
    this.seed = options.seed ?? 1;
    this.epoch = options.epoch === undefined ? DEFAULT_EPOCH : new Date(options.epoch).getTime();
    this.clock = this.epoch;
    this.slow = { totalMs: options.slow?.totalMs ?? 3000, chunks: Math.max(1, options.slow?.chunks ?? 6) };
    this.hugeBytes = options.hugeBytes ?? 256 * 1024 * 1024;
    this.crawlDelay = { alpha: options.crawlDelaySeconds?.alpha ?? 0.25, beta: options.crawlDelaySeconds?.beta ?? 1 };
    this.generatedPages = Math.max(0, Math.floor(options.generatedPages ?? 0));
    this.extraSites = options.extraSites ?? [];
    const names = new Set<string>(SITE_NAMES);
    for (const site of this.extraSites) {
      if (!/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/.test(site.name) || names.has(site.name)) throw new Error(`extra site name ${site.name} is invalid or taken`);
      names.add(site.name);
    }
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => (this.latencyMs > 0 ? void setTimeout(() => this.handle(req, res), this.latencyMs) : this.handle(req, res)));
    this.server.keepAliveTimeout = 5_000;
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
    const alpha = this.siteUrl('alpha');
    this.special = Object.fromEntries(Object.entries(SPECIAL_PATHS).map(([k, v]) => [k, `${alpha}${v}`])) as Record<SpecialName, string>;
    this.build();
    return this;
  }

  /** `http://<site>.localhost:<port>` (no trailing slash). */
  siteUrl(site: WorldSite): string {
    return `http://${site}.localhost:${this.port}`;
  }

  /** The world clock (epoch ms): the epoch, plus an hour per mutation. */
  now(): number {
    return this.clock;
  }

  /** The documents of one site (or of all), as they are now: the truth a crawl is compared with. */
  pages(site?: WorldSite): WebPage[] {
    const names: WorldSite[] = site ? [site] : [...SITE_NAMES, ...this.extraSites.map((x) => x.name)];
    return names.flatMap((name) => {
      const reachable = this.reachable(name);
      const out: WebPage[] = [];
      for (const [path, res] of this.sites.get(name)!) {
        if (res.kind !== 'doc') continue;
        out.push({
          site: name,
          url: `${this.siteUrl(name)}${path}`,
          path,
          title: res.title,
          contentType: res.contentType,
          lang: res.lang,
          keyword: res.keyword,
          text: res.text,
          body: res.body,
          lastmod: iso(res.lastmod),
          etag: res.etag,
          publishedDate: res.publishedDate === null ? null : iso(res.publishedDate),
          author: res.author,
          inSitemap: res.sitemap !== null,
          robotsAllowed: robotsAllowed(name, path) && !(this.extraSites.find((x) => x.name === name)?.disallow ?? []).some((prefix) => path.startsWith(prefix)),
          noindex: res.noindex,
          nofollow: res.nofollow,
          canonical: res.canonical,
          links: res.links,
          reachable: reachable.has(path),
        });
      }
      return out;
    });
  }

  /** The page at `target` (an absolute URL of the world, or a path of alpha), or undefined. */
  page(target: string): WebPage | undefined {
    const { site, path } = this.locate(target);
    return this.pages(site).find((p) => p.path === path);
  }

  /** Replaces a document's body (same content type); its lastmod, ETag and sitemap entries move on. */
  change(target: string, body: string | Buffer): WebPage {
    const { site, path } = this.locate(target);
    const old = this.sites.get(site)!.get(path);
    if (old?.kind !== 'doc') throw new Error(`no document at ${target}`);
    this.tick();
    this.sites.get(site)!.set(path, this.describe(site, path, { ...old, body: toBuffer(body, old.contentType), lastmod: this.clock, keyword: null }));
    return this.page(`${this.siteUrl(site)}${path}`)!;
  }

  /** Takes a document away: it answers `status` (410 by default, or 404) and leaves its sitemap. */
  remove(target: string, status: 404 | 410 = 410): void {
    const { site, path } = this.locate(target);
    const old = this.sites.get(site)!.get(path);
    if (old?.kind !== 'doc') throw new Error(`no document at ${target}`);
    this.tick();
    if (old.sitemap) this.sitemapChanged.set(`${site}/${old.sitemap}`, this.clock);
    this.sites.get(site)!.set(path, { kind: 'gone', status });
  }

  /**
   * Adds a document (HTML unless `contentType` says otherwise), listed in its site's sitemap unless
   * `inSitemap: false` (gamma has none). No other page links to it unless a test changes one to.
   */
  add(target: string, body: string | Buffer, options: { contentType?: string; inSitemap?: boolean } = {}): WebPage {
    const { site, path } = this.locate(target);
    const existing = this.sites.get(site)!.get(path);
    if (existing?.kind === 'doc' || existing?.kind === 'special' || existing?.kind === 'redirect') throw new Error(`${target} exists`);
    this.tick();
    const contentType = options.contentType ?? HTML;
    const sitemap = options.inSitemap === false ? null : sitemapFor(site, path);
    const doc = this.describe(site, path, {
      ...emptyDoc(contentType, this.clock),
      body: toBuffer(body, contentType),
      sitemap,
    });
    this.sites.get(site)!.set(path, doc);
    return this.page(`${this.siteUrl(site)}${path}`)!;
  }

  /**
   * Makes a path of the world answer `status` (503 by default) until `restore`: a page that is down for a while,
   * whose document is kept (still in `pages()`, its sitemap and its links) and comes back unchanged.
   */
  outage(target: string, status = 503): void {
    const { site, path } = this.locate(target);
    this.outages.set(`${site}${path}`, status);
  }

  /** Ends an `outage`. */
  restore(target: string): void {
    const { site, path } = this.locate(target);
    this.outages.delete(`${site}${path}`);
  }

  /** Makes a path answer `ms` later than it would (a slow server); 0 ends it. */
  delay(target: string, ms: number): void {
    const { site, path } = this.locate(target);
    if (ms > 0) this.delays.set(`${site}${path}`, ms);
    else this.delays.delete(`${site}${path}`);
  }

  /** Requests to one site (optionally one path, query included). */
  requestsTo(site: WorldSite | 'hub', path?: string): WebRequest[] {
    return this.requests.filter((r) => r.site === site && (path === undefined || r.path === path));
  }

  clearRequests(): void {
    this.requests.length = 0;
  }

  /** Resolves when no response is in progress (a dropped huge or slow page has stopped being written). */
  idle(): Promise<void> {
    if (this.open === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  // ---- serving ----

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const hostHeader = (req.headers.host ?? '').toLowerCase();
    const hostname = hostHeader.startsWith('[') ? hostHeader.slice(0, hostHeader.indexOf(']') + 1) : hostHeader.replace(/:\d+$/, '');
    const site: WorldSite | 'hub' | null = hostname === '127.0.0.1' || hostname === 'localhost' ? 'hub' : this.siteOfHost(hostname);
    const rec: WebRequest = {
      method: req.method ?? '',
      host: req.headers.host ?? '',
      site,
      path: req.url ?? '',
      headers: req.headers,
      time: performance.timeOrigin + performance.now(),
      status: 0,
      bytesSent: 0,
      done: false,
    };
    this.requests.push(rec);
    this.open += 1;
    res.on('close', () => {
      rec.done = true;
      this.open -= 1;
      if (this.open === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    });
    req.resume();
    if (site === null) return this.sendText(req, res, rec, 421, `No site of the loopback web is called ${hostname}.\n`);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return this.sendText(req, res, rec, 405, 'Only GET and HEAD are served.\n');
    }
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://loopback.invalid');
    } catch {
      return this.sendText(req, res, rec, 400, 'Bad request target.\n');
    }
    if (site === 'hub') return this.serveHub(req, res, rec, url.pathname);
    const delay = this.delays.get(`${site}${url.pathname}${url.search}`);
    if (delay !== undefined) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        if (!res.destroyed) this.serveSite(req, res, rec, site, url);
      }, delay);
      this.timers.add(timer);
      return;
    }
    this.serveSite(req, res, rec, site, url);
  }

  private serveSite(req: IncomingMessage, res: ServerResponse, rec: WebRequest, site: WorldSite, url: URL): void {
    const outage = this.outages.get(`${site}${url.pathname}${url.search}`);
    if (outage !== undefined) return this.sendHtml(req, res, rec, outage, errorPage('Unavailable', 'This page is down for now; try again later.'));
    const resources = this.sites.get(site)!;
    const resource = resources.get(url.pathname + url.search) ?? (url.search ? resources.get(url.pathname) : undefined);
    if (!resource) return this.sendHtml(req, res, rec, 404, errorPage('Not found', `Nothing is published at ${escapeHtml(url.pathname)}.`));
    switch (resource.kind) {
      case 'doc':
        return this.sendDoc(req, res, rec, resource);
      case 'redirect':
        res.setHeader('location', resource.location);
        return this.sendHtml(req, res, rec, resource.status, errorPage('Moved', `See <a href="${escapeHtml(resource.location)}">the new address</a>.`));
      case 'gone':
        return resource.status === 410
          ? this.sendHtml(req, res, rec, 410, errorPage('Gone', 'This page was removed and will not come back.'))
          : this.sendHtml(req, res, rec, 404, errorPage('Not found', `Nothing is published at ${escapeHtml(url.pathname)}.`));
      case 'special':
        return resource.serve(req, res, rec);
    }
  }

  private serveHub(req: IncomingMessage, res: ServerResponse, rec: WebRequest, path: string): void {
    if (path === '/robots.txt') return this.sendDoc(req, res, rec, this.generated('text/plain; charset=utf-8', '', this.epoch));
    if (path !== '/') return this.sendHtml(req, res, rec, 404, errorPage('Not found', 'The hub only has an index.'));
    const items = SITE_NAMES.map((s) => `<li><a href="${this.siteUrl(s)}/">${s}</a></li>`).join('\n');
    return this.sendHtml(req, res, rec, 200, htmlDocument({ title: 'The loopback web', lang: 'en', body: `<h1>The loopback web</h1>\n<ul>\n${items}\n</ul>` }));
  }

  /** A document with validators: 304 to a matching If-None-Match (which wins) or a recent enough If-Modified-Since. */
  private sendDoc(req: IncomingMessage, res: ServerResponse, rec: WebRequest, doc: Pick<Doc, 'contentType' | 'body' | 'lastmod' | 'etag' | 'headers'>): void {
    const lastModified = new Date(doc.lastmod).toUTCString();
    res.setHeader('etag', doc.etag);
    res.setHeader('last-modified', lastModified);
    res.setHeader('cache-control', 'no-cache');
    for (const [name, value] of Object.entries(doc.headers)) res.setHeader(name, value);
    if (notModified(req, doc.etag, doc.lastmod)) {
      rec.status = 304;
      res.writeHead(304).end();
      return;
    }
    res.setHeader('content-type', doc.contentType);
    this.sendBody(req, res, rec, 200, doc.body);
  }

  private sendHtml(req: IncomingMessage, res: ServerResponse, rec: WebRequest, status: number, html: string): void {
    res.setHeader('content-type', HTML);
    this.sendBody(req, res, rec, status, Buffer.from(html, 'utf8'));
  }

  private sendText(req: IncomingMessage, res: ServerResponse, rec: WebRequest, status: number, text: string): void {
    res.setHeader('content-type', 'text/plain; charset=utf-8');
    this.sendBody(req, res, rec, status, Buffer.from(text, 'utf8'));
  }

  private sendBody(req: IncomingMessage, res: ServerResponse, rec: WebRequest, status: number, body: Buffer): void {
    rec.status = status;
    res.setHeader('content-length', body.length);
    res.writeHead(status);
    if (req.method === 'HEAD') return void res.end();
    rec.bytesSent = body.length;
    res.end(body);
  }

  /** Headers at once, then the body in `slow.chunks` pieces over `slow.totalMs`; stops when the client leaves. */
  private serveSlow(req: IncomingMessage, res: ServerResponse, rec: WebRequest): void {
    rec.status = 200;
    res.writeHead(200, { 'content-type': HTML, 'cache-control': 'no-store' });
    if (req.method === 'HEAD') return void res.end();
    const { totalMs, chunks } = this.slow;
    const write = (text: string) => {
      const buf = Buffer.from(text, 'utf8');
      rec.bytesSent += buf.length;
      res.write(buf);
    };
    write('<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>A slow page</title></head><body>\n<h1>A slow page</h1>\n');
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const next = () => {
      if (timer) this.timers.delete(timer);
      if (res.destroyed) return;
      sent += 1;
      write(`<p>Piece ${sent} of ${chunks}, sent slowly by the loopback web.</p>\n`);
      if (sent >= chunks) {
        res.end('</body></html>\n');
        rec.bytesSent += 15;
        return;
      }
      timer = setTimeout(next, totalMs / chunks);
      this.timers.add(timer);
    };
    timer = setTimeout(next, totalMs / chunks);
    this.timers.add(timer);
    res.on('close', () => {
      if (timer) {
        clearTimeout(timer);
        this.timers.delete(timer);
      }
    });
  }

  /** `hugeBytes` of body, written as the client reads (back-pressure), so it costs no memory; chunked unless declared. */
  private serveHuge(req: IncomingMessage, res: ServerResponse, rec: WebRequest, declared: boolean): void {
    rec.status = 200;
    const total = this.hugeBytes;
    res.writeHead(200, {
      'content-type': declared ? 'application/octet-stream' : HTML,
      'cache-control': 'no-store',
      ...(declared ? { 'content-length': String(total) } : {}),
    });
    if (req.method === 'HEAD') return void res.end();
    const filler = Buffer.from('<p>This page never ends. The loopback web keeps writing it while anyone reads.</p>\n'.repeat(800), 'utf8');
    const head = Buffer.from('<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>A huge page</title></head><body>\n', 'utf8');
    let sent = 0;
    const pump = () => {
      while (sent < total && !res.destroyed) {
        const source = sent === 0 && !declared ? head : filler;
        const piece = source.subarray(0, Math.min(source.length, total - sent));
        sent += piece.length;
        rec.bytesSent = sent;
        if (!res.write(piece)) {
          res.once('drain', pump);
          return;
        }
      }
      if (!res.destroyed) res.end();
    };
    pump();
  }

  // ---- building the world ----

  private build(): void {
    const draw = new Draw(this.seed);
    const words = draw.shuffled(VOCABULARY);
    let w = 0;
    const word = () => words[w++ % words.length]!;
    const keywords = new Set<string>();
    const keyword = () => {
      for (;;) {
        const k = Array.from({ length: 3 }, () => draw.pick([...'bdfgklmnprstvz']) + draw.pick([...'aeiou'])).join('') + draw.pick([...'nrst']);
        if (!keywords.has(k) && !VOCABULARY.includes(k)) {
          keywords.add(k);
          return k;
        }
      }
    };
    const sentence = () => `The ${draw.pick(VOCABULARY)} of the ${draw.pick(VOCABULARY)} ${draw.pick(VERBS)} the ${draw.pick(VOCABULARY)} and the ${draw.pick(VOCABULARY)}.`;
    const paragraph = (n = 3) => Array.from({ length: n }, sentence).join(' ');
    const age = (maxDays: number) => this.clock - (1 + draw.int(maxDays)) * DAY - draw.int(24) * HOUR;

    const A = this.siteUrl('alpha');
    const B = this.siteUrl('beta');
    const G = this.siteUrl('gamma');
    for (const s of SITE_NAMES) this.sites.set(s, new Map());
    const alpha = this.sites.get('alpha')!;
    const beta = this.sites.get('beta')!;
    const delta = this.sites.get('delta')!;

    // The plan first (paths and titles of every site), so pages can link across sites.
    const docs = Array.from({ length: 12 }, (_, i) => ({ path: `/docs/page-${i + 1}.html`, title: `${cap(word())} ${cap(word())}`, keyword: keyword() }));
    const posts = POST_AGES_DAYS.map((days) => {
      const published = this.clock - Math.round(days * DAY);
      const d = new Date(published);
      const slug = `${word()}-${word()}`;
      return {
        path: `/posts/${d.getUTCFullYear()}/${String(d.getUTCMonth() + 1).padStart(2, '0')}/${slug}.html`,
        title: `Notes on the ${slug.replace('-', ' ')}`,
        keyword: keyword(),
        published,
        author: draw.pick(['Ada Brook', 'Ilse Marten', 'Tomas Reyes', 'Noor Haddad']),
      };
    });
    const wikiWords = [...Array.from({ length: 7 }, () => cap(word())), 'Café'];
    const wiki = wikiWords.map((name) => ({ path: `/wiki/${encodeURIComponent(name)}`, href: name, title: `${name} (wiki)`, keyword: keyword() }));
    const deltaPages = ['/', '/pages/one.html', '/pages/two.html'].map((path) => ({ path, title: `Delta ${cap(word())}`, keyword: keyword() }));
    const anywhere = () =>
      draw.pick([
        ...posts.map((p) => `${B}${p.path}`),
        ...wiki.map((p) => `${G}${p.path}`),
        `${B}/`,
        `${G}/`,
        ...docs.map((p) => `${A}${p.path}`),
      ]);
    const offSite = () => `https://www.example.com/${draw.pick(VOCABULARY)}/${draw.pick(VOCABULARY)}`;

    const put = (site: SiteName, path: string, doc: Partial<Doc> & { body: Buffer; contentType: string }) => {
      this.sites.get(site)!.set(path, this.describe(site, path, { ...emptyDoc(doc.contentType, this.clock), ...doc }));
    };
    const putHtml = (site: SiteName, path: string, html: string, extra: Partial<Doc> = {}) =>
      put(site, path, { contentType: HTML, body: Buffer.from(html, 'utf8'), lastmod: age(120), ...extra });

    // ---- alpha ----
    const linkForm = (from: string, to: string) => {
      const form = draw.int(5);
      const rel = relativePath(from, to);
      if (form === 0) return rel;
      if (form === 1) return to;
      if (form === 2) return `${A}${to}`;
      if (form === 3) return `${rel}#part-${1 + draw.int(3)}`;
      return `${rel}?ref=${draw.pick(['nav', 'related', 'footer'])}`;
    };
    docs.forEach((d, i) => {
      const links: string[] = [`<a href="/">Home</a>`];
      if (i > 0) links.push(`<a href="./${docs[i - 1]!.path.slice(6)}">Previous: ${docs[i - 1]!.title}</a>`);
      if (i < docs.length - 1) links.push(`<a href="${docs[i + 1]!.path.slice(6)}">Next: ${docs[i + 1]!.title}</a>`);
      for (const j of draw.shuffled(docs.map((_, k) => k).filter((k) => k !== i)).slice(0, 2)) {
        links.push(`<a href="${linkForm(d.path, docs[j]!.path)}">${docs[j]!.title}</a>`);
      }
      links.push(`<a href="${anywhere()}">Elsewhere in the loopback web</a>`);
      if (draw.next() < 0.4) links.push(`<a href="${offSite()}">Further reading</a>`);
      if (i === 4) links.push(`<a href="page-7.html?sessionid=${keyword()}">Continue your session</a>`);
      putHtml('alpha', d.path, htmlDocument({
        title: d.title,
        lang: 'en',
        canonical: `${A}${d.path}`,
        body: `<h1 id="top">${d.title}</h1>\n<p>${paragraph()} Reference code ${d.keyword}.</p>\n<h2 id="part-1">Part one</h2>\n<p>${paragraph()}</p>\n<h2 id="part-2">Part two</h2>\n<p>${paragraph(2)}</p>\n<nav><ul>\n${links.map((l) => `<li>${l}</li>`).join('\n')}\n</ul></nav>`,
      }), { keyword: d.keyword, sitemap: 'main' });
    });
    const simple = (site: SiteName, path: string, title: string, text: string, linksHtml: string[], extra: Partial<Doc> = {}, head = '') => {
      const k = keyword();
      putHtml(site, path, htmlDocument({ title, lang: 'en', head, body: `<h1>${title}</h1>\n<p>${text} Reference code ${k}.</p>\n<ul>\n${linksHtml.map((l) => `<li>${l}</li>`).join('\n')}\n</ul>` }), { keyword: k, ...extra });
    };
    simple('alpha', '/', 'Alpha documentation', paragraph(), [
      '<a href="docs/page-1.html">Start reading</a>',
      '<a href="/about.html">About alpha</a>',
      '<a href="/docs/odd-links.html">Odd links</a>',
      '<a href="/docs/print/page-2.html">Print version of page 2</a>',
      '<a href="/old-docs/page-3.html">Page 3 (old address)</a>',
      '<a href="/private/secret.html">Private notes</a>',
      '<a href="/private/open.html">Open notes</a>',
      '<a href="/meta/noindex.html">Not for indexes</a>',
      '<a href="/meta/nofollow-links.html">Links not to follow</a>',
      '<a href="/meta/x-robots-noindex.html">Header noindex</a>',
      '<a href="/intl/latin1.html">Latin-1 page</a>',
      '<a href="/intl/meta-charset.html">Page with its charset in meta</a>',
      '<a href="/intl/utf8.html">UTF-8 page</a>',
      '<a href="/files/report.pdf">Report (PDF)</a>',
      '<a href="/files/notes.txt">Notes (text)</a>',
      '<a href="/files/data.json">Data (JSON)</a>',
      '<a href="/files/pixel.png">Pixel (PNG)</a>',
      `<a href="${B}/">The beta blog</a>`,
      `<a href="${G}/">The gamma wiki</a>`,
    ], { sitemap: 'main' });
    simple('alpha', '/about.html', 'About alpha', paragraph(), ['<a href="/">Home</a>', '<a href="docs/page-1.html">Documentation</a>'], { sitemap: 'main' });
    simple('alpha', '/orphan.html', 'An orphan page', `${paragraph()} Only the sitemap knows this page.`, ['<a href="/">Home</a>'], { sitemap: 'main' });
    simple('alpha', '/docs/odd-links.html', 'Odd links', paragraph(), [
      '<a href="/docs/missing.html">A broken link</a>',
      '<a href="/gone.html">A removed page</a>',
      '<a href="/redirect/loop/a">A redirect loop</a>',
      '<a href="/redirect/metadata">A redirect to the metadata address</a>',
      `<a href="${offSite()}">Off-site</a>`,
      '<a href="mailto:docs@example.com">Mail</a>',
      '<a href="javascript:void(0)">Script</a>',
      '<a href="tel:+15550100">Phone</a>',
      '<a href="#top">Back to top</a>',
      '<a href="../about.html">Up and about</a>',
      `<a href="//beta.localhost:${this.port}/about.html">Protocol-relative</a>`,
      '<a href="?view=compact">This page, compact</a>',
      '<a href=" page-1.html ">Padded</a>',
      '<A HREF="page-2.html">Shouting</A>',
      "<a href='page-3.html'>Single quotes</a>",
      '<a href=page-4.html>Unquoted</a>',
      '<a href="page-5.html?a=1&amp;b=2">Escaped ampersand</a>',
      '<a>No address</a>',
    ], { sitemap: 'main' });
    const d2 = docs[1]!;
    putHtml('alpha', '/docs/print/page-2.html', htmlDocument({ title: `${d2.title} (print)`, lang: 'en', canonical: `${A}${d2.path}`, body: `<h1>${d2.title}</h1>\n<p>${paragraph()} A printable copy of page 2.</p>` }));
    simple('alpha', '/private/secret.html', 'Private notes', paragraph(), ['<a href="/">Home</a>']);
    simple('alpha', '/private/open.html', 'Open notes', paragraph(), ['<a href="/">Home</a>'], { sitemap: 'main' });
    simple('alpha', '/meta/noindex.html', 'Not for indexes', paragraph(), ['<a href="/meta/behind-noindex.html">Behind the noindex page</a>'], {}, '<meta name="robots" content="noindex,nofollow">');
    simple('alpha', '/meta/behind-noindex.html', 'Behind the noindex page', paragraph(), ['<a href="/">Home</a>']);
    simple('alpha', '/meta/nofollow-links.html', 'Links not to follow', paragraph(), [
      '<a href="/meta/only-nofollow.html" rel="nofollow">Not to be followed</a>',
      '<a href="/meta/only-nofollow.html?from=sponsor" rel="sponsored nofollow noopener">Sponsored</a>',
      '<a href="/docs/page-1.html">Followed</a>',
    ]);
    simple('alpha', '/meta/only-nofollow.html', 'Reached only through nofollow', paragraph(), ['<a href="/">Home</a>']);
    simple('alpha', '/meta/x-robots-noindex.html', 'Noindex in a header', paragraph(), ['<a href="/">Home</a>'], { headers: { 'x-robots-tag': 'noindex' } });
    const latinKeyword = keyword();
    put('alpha', '/intl/latin1.html', {
      contentType: 'text/html; charset=iso-8859-1',
      body: Buffer.from(htmlDocument({ title: 'Grüße aus der Werkstatt', lang: 'de', charset: 'iso-8859-1', body: `<h1>Grüße aus der Werkstatt</h1>\n<p>Größe, Übersicht und Käse: ein Café in der Straße, naïve Freude. Kennwort ${latinKeyword}.</p>\n<p><a href="/">Startseite</a></p>` }), 'latin1'),
      lastmod: age(60),
      keyword: latinKeyword,
      sitemap: 'main',
    });
    const metaKeyword = keyword();
    put('alpha', '/intl/meta-charset.html', {
      contentType: 'text/html',
      body: Buffer.from(htmlDocument({ title: 'Café crème à la française', lang: 'fr', charset: 'iso-8859-1', body: `<h1>Café crème à la française</h1>\n<p>Déjà vu, été, garçon, où. Mot clé ${metaKeyword}.</p>\n<p><a href="/">Accueil</a></p>` }), 'latin1'),
      lastmod: age(60),
      keyword: metaKeyword,
    });
    const utfKeyword = keyword();
    putHtml('alpha', '/intl/utf8.html', htmlDocument({ title: '日本語とΕλληνικά', lang: 'ja', body: `<h1>日本語とΕλληνικά</h1>\n<p>東京の図書館 — Καλημέρα κόσμε — 🌊🏔️ ${utfKeyword}.</p>\n<p><a href="/">Home</a></p>` }), { keyword: utfKeyword, sitemap: 'main' });
    const pdfKeyword = keyword();
    put('alpha', '/files/report.pdf', { contentType: 'application/pdf', body: pdf(`Alpha loopback report ${pdfKeyword}`), lastmod: age(200), title: 'Alpha loopback report', text: `Alpha loopback report ${pdfKeyword}`, keyword: pdfKeyword, sitemap: 'main' });
    const txtKeyword = keyword();
    const notes = `Alpha notes\n\n${paragraph()}\nServed by the Lore loopback web. Reference code ${txtKeyword}.\n`;
    put('alpha', '/files/notes.txt', { contentType: 'text/plain; charset=utf-8', body: Buffer.from(notes, 'utf8'), lastmod: age(200), keyword: txtKeyword, sitemap: 'main' });
    const jsonKeyword = keyword();
    const data = JSON.stringify({ site: 'alpha', keyword: jsonKeyword, words: draw.shuffled(VOCABULARY).slice(0, 5) }, null, 2);
    put('alpha', '/files/data.json', { contentType: 'application/json', body: Buffer.from(data, 'utf8'), lastmod: age(200), title: 'data.json', text: data, keyword: jsonKeyword });
    put('alpha', '/files/pixel.png', { contentType: 'image/png', body: png(), lastmod: age(200), title: 'pixel.png' });

    alpha.set('/gone.html', { kind: 'gone', status: 410 });
    const redirects: Array<[string, Redirect['status'], string]> = [
      ['/redirect/301', 301, '/docs/page-1.html'],
      ['/redirect/302', 302, '/docs/page-2.html'],
      ['/redirect/307', 307, '/docs/page-3.html'],
      ['/redirect/308', 308, '/docs/page-4.html'],
      ['/redirect/chain/1', 302, '/redirect/chain/2'],
      ['/redirect/chain/2', 301, `${A}/redirect/chain/3`],
      ['/redirect/chain/3', 308, '../../docs/page-6.html'],
      ['/redirect/loop/a', 302, '/redirect/loop/b'],
      ['/redirect/loop/b', 302, '/redirect/loop/a'],
      ['/redirect/cross-site', 301, `${B}/about.html`],
      ['/redirect/disallowed', 302, '/private/secret.html'],
      ['/redirect/metadata', 302, 'http://169.254.169.254/latest/meta-data/'],
      ['/redirect/private', 302, 'http://10.0.0.1/admin'],
      ['/redirect/off-world', 302, 'https://www.example.com/'],
      ['/old-docs/page-3.html', 301, '/docs/page-3.html'],
    ];
    for (const [path, status, location] of redirects) alpha.set(path, { kind: 'redirect', status, location });
    alpha.set('/slow.html', { kind: 'special', serve: (req, res, rec) => this.serveSlow(req, res, rec) });
    alpha.set('/huge.html', { kind: 'special', serve: (req, res, rec) => this.serveHuge(req, res, rec, false) });
    alpha.set('/huge-declared.bin', { kind: 'special', serve: (req, res, rec) => this.serveHuge(req, res, rec, true) });
    alpha.set('/robots.txt', this.robots(
      [
        '# alpha: a group for Lore, a bot shut out, and a stricter group for everyone else.',
        `User-agent: ${LORE_AGENT}`,
        'Allow: /private/open.html',
        'Disallow: /private/',
        'Disallow: /*?sessionid=',
        `Crawl-delay: ${this.crawlDelay.alpha}`,
        '',
        'User-agent: ShutOutBot',
        'Disallow: /',
        '',
        'User-agent: *',
        'Disallow: /private/',
        'Disallow: /docs/print/',
        'Crawl-delay: 5',
        '',
        `Sitemap: ${A}/sitemap.xml`,
      ],
    ));
    alpha.set('/sitemap.xml', this.sitemapResource('alpha', 'main'));

    // ---- beta ----
    posts.forEach((p, i) => {
      const links = ['<a href="/">Blog home</a>'];
      if (i > 0) links.push(`<a href="${posts[i - 1]!.path}">Newer: ${posts[i - 1]!.title}</a>`);
      if (i < posts.length - 1) links.push(`<a href="${relativePath(p.path, posts[i + 1]!.path)}">Older: ${posts[i + 1]!.title}</a>`);
      links.push(`<a href="/tags/${i % 2 === 0 ? 'field' : 'studio'}.html">Tag</a>`);
      links.push(`<a href="${anywhere()}">Elsewhere in the loopback web</a>`);
      if (draw.next() < 0.4) links.push(`<a href="${offSite()}">Further reading</a>`);
      const when = new Date(p.published).toISOString();
      putHtml('beta', p.path, htmlDocument({
        title: p.title,
        lang: 'en',
        canonical: `${B}${p.path}`,
        head: `<meta name="author" content="${p.author}">`,
        body: `<article><h1>${p.title}</h1>\n<p>By ${p.author}, <time datetime="${when}">${when.slice(0, 10)}</time>.</p>\n<p>${paragraph()} Reference code ${p.keyword}.</p>\n<p>${paragraph()}</p></article>\n<nav><ul>\n${links.map((l) => `<li>${l}</li>`).join('\n')}\n</ul></nav>`,
      }), { keyword: p.keyword, sitemap: 'posts', publishedDate: p.published, author: p.author, lastmod: p.published + draw.int(6) * HOUR });
    });
    simple('beta', '/', 'The beta blog', paragraph(), [
      ...posts.map((p) => `<a href="${p.path.slice(1)}">${p.title}</a>`),
      '<a href="/about.html">About</a>',
      '<a href="/contact.html">Contact</a>',
      '<a href="/drafts/upcoming.html">Upcoming (draft)</a>',
    ], { sitemap: 'pages', lastmod: posts[0]!.published });
    simple('beta', '/about.html', 'About the beta blog', paragraph(), ['<a href="/">Blog home</a>', `<a href="${A}/">Alpha documentation</a>`], { sitemap: 'pages' });
    simple('beta', '/contact.html', 'Contact', paragraph(2), ['<a href="/">Blog home</a>', '<a href="mailto:beta@example.com">Write to us</a>'], { sitemap: 'pages' });
    for (const [tag, parity] of [['field', 0], ['studio', 1]] as const) {
      simple('beta', `/tags/${tag}.html`, `Posts tagged ${tag}`, paragraph(2), posts.filter((_, i) => i % 2 === parity).map((p) => `<a href="..${p.path}">${p.title}</a>`), { sitemap: 'pages' });
    }
    simple('beta', '/drafts/upcoming.html', 'An upcoming post', paragraph(), ['<a href="/">Blog home</a>']);
    beta.set('/robots.txt', this.robots(['User-agent: *', 'Disallow: /drafts/', `Crawl-delay: ${this.crawlDelay.beta}`, '', `Sitemap: ${B}/sitemap.xml`]));
    beta.set('/sitemap.xml', this.sitemapIndexResource('beta', ['posts', 'pages']));
    beta.set('/sitemaps/posts.xml', this.sitemapResource('beta', 'posts'));
    beta.set('/sitemaps/pages.xml', this.sitemapResource('beta', 'pages'));

    // ---- gamma ----
    const gammaHtml = (path: string, title: string, body: string, k: string) =>
      put('gamma', path, { contentType: 'text/html', body: Buffer.from(htmlDocument({ title, lang: 'en', body }), 'utf8'), lastmod: age(300), keyword: k });
    wiki.forEach((p, i) => {
      const others = draw.shuffled(wiki.filter((o) => o !== p)).slice(0, 3);
      const links = [
        '<a href="/">Wiki home</a>',
        ...others.map((o, j) => `<a href="${j === 0 ? o.href : `/wiki/${o.href}`}">${o.title}</a>`),
        `<a href="${wiki[(i + 1) % wiki.length]!.href}">Next article</a>`,
        `<a href="${anywhere()}">Elsewhere in the loopback web</a>`,
      ];
      if (i === 2) links.push('<a href="/wiki/Nowhere">An article nobody wrote</a>');
      gammaHtml(p.path, p.title, `<h1>${p.title}</h1>\n<p>${paragraph()} Reference code ${p.keyword}.</p>\n<ul>\n${links.map((l) => `<li>${l}</li>`).join('\n')}\n</ul>`, p.keyword);
    });
    const listPages = 3;
    for (let n = 1; n <= listPages; n++) {
      const chunk = wiki.slice((n - 1) * 3, n * 3);
      const links = chunk.map((p) => `<a href="wiki/${p.href}">${p.title}</a>`);
      if (n > 1) links.push(`<a href="?page=${n - 1}">Previous page</a>`);
      if (n < listPages) links.push(`<a href="?page=${n + 1}">Next page</a>`);
      const k = keyword();
      gammaHtml(`/list?page=${n}`, `All articles, page ${n}`, `<h1>All articles, page ${n}</h1>\n<p>${paragraph(2)} Reference code ${k}.</p>\n<ul>\n${links.map((l) => `<li>${l}</li>`).join('\n')}\n</ul>`, k);
    }
    const gk = keyword();
    gammaHtml('/', 'The gamma wiki', `<h1>The gamma wiki</h1>\n<p>${paragraph()} Reference code ${gk}.</p>\n<ul>\n<li><a href="/list?page=1">All articles</a></li>\n${wiki.slice(0, 3).map((p) => `<li><a href="/wiki/${p.href}">${p.title}</a></li>`).join('\n')}\n</ul>`, gk);

    // ---- delta ----
    deltaPages.forEach((p) => {
      const links = deltaPages.filter((o) => o !== p).map((o) => `<a href="${o.path}">${o.title}</a>`);
      putHtml('delta', p.path, htmlDocument({ title: p.title, lang: 'en', body: `<h1>${p.title}</h1>\n<p>${paragraph()} Reference code ${p.keyword}.</p>\n<ul>\n${links.map((l) => `<li>${l}</li>`).join('\n')}\n</ul>` }), { keyword: p.keyword, sitemap: 'main' });
    });
    delta.set('/robots.txt', {
      kind: 'special',
      serve: (req, res, rec) => this.sendText(req, res, rec, 500, 'The robots file is broken today.\n'),
    });
    delta.set('/sitemap.xml', this.sitemapResource('delta', 'main'));
    if (this.generatedPages > 0) this.buildGenerated(this.generatedPages);
    for (const extra of this.extraSites) this.buildExtra(extra);
  }

  /** One of `extraSites`: its pages as given, its robots.txt and its sitemap. */
  private buildExtra(extra: ExtraSite): void {
    const resources = new Map<string, Resource>();
    this.sites.set(extra.name, resources);
    for (const page of extra.pages) {
      resources.set(page.path, this.describe(extra.name, page.path, {
        ...emptyDoc(HTML, this.epoch - (page.ageDays ?? 30) * DAY),
        body: Buffer.from(page.html, 'utf8'),
        sitemap: 'main',
      }));
    }
    const url = this.siteUrl(extra.name);
    resources.set('/robots.txt', this.robots(['User-agent: *', ...(extra.disallow ?? []).map((p) => `Disallow: ${p}`), '', `Sitemap: ${url}/sitemap.xml`]));
    resources.set('/sitemap.xml', this.sitemapResource(extra.name, 'main'));
  }

  /**
   * Alpha's generated section (`generatedPages`): drawn from its own numbers after everything else, so the rest of
   * the world is the same with or without it, and linked from nowhere outside it.
   */
  private buildGenerated(count: number): void {
    const draw = new Draw(`${this.seed}/generated`);
    const A = this.siteUrl('alpha');
    const alpha = this.sites.get('alpha')!;
    const taken = new Set<string>();
    for (const res of alpha.values()) if (res.kind === 'doc' && res.keyword) taken.add(res.keyword);
    const keyword = () => {
      for (;;) {
        const k = Array.from({ length: 4 }, () => draw.pick([...'bdfgklmnprstvz']) + draw.pick([...'aeiou'])).join('') + draw.pick([...'nrst']);
        if (!taken.has(k)) {
          taken.add(k);
          return k;
        }
      }
    };
    const sentence = () => `The ${draw.pick(VOCABULARY)} of the ${draw.pick(VOCABULARY)} ${draw.pick(VERBS)} the ${draw.pick(VOCABULARY)} and the ${draw.pick(VOCABULARY)}.`;
    const paragraph = (n: number) => Array.from({ length: n }, sentence).join(' ');
    const lastmod = () => this.clock - (1 + draw.int(180)) * DAY - draw.int(24) * HOUR;
    const PER_SECTION = 25;
    const sections = Math.ceil(count / PER_SECTION);
    const pages = Array.from({ length: count }, (_, i) => {
      const section = Math.floor(i / PER_SECTION) + 1;
      return { path: `/generated/s${section}/page-${(i % PER_SECTION) + 1}.html`, section, title: `${cap(draw.pick(VOCABULARY))} ${cap(draw.pick(VOCABULARY))} ${i + 1}`, keyword: keyword() };
    });
    const put = (path: string, title: string, body: string, k: string) =>
      alpha.set(path, this.describe('alpha', path, {
        ...emptyDoc(HTML, lastmod()),
        body: Buffer.from(htmlDocument({ title, lang: 'en', body }), 'utf8'),
        keyword: k,
        sitemap: 'generated',
      }));
    const list = (links: string[]) => `<ul>\n${links.map((l) => `<li>${l}</li>`).join('\n')}\n</ul>`;
    pages.forEach((p, i) => {
      const links = ['<a href="/">Alpha home</a>', '<a href="./">Section contents</a>'];
      if (i > 0) links.push(`<a href="${relativePath(p.path, pages[i - 1]!.path)}">Previous: ${pages[i - 1]!.title}</a>`);
      if (i < count - 1) links.push(`<a href="${relativePath(p.path, pages[i + 1]!.path)}">Next: ${pages[i + 1]!.title}</a>`);
      for (let n = 0; n < 2 && count > 1; n++) {
        const other = pages[draw.int(count)]!;
        if (other !== p) links.push(`<a href="${draw.next() < 0.5 ? other.path : `${A}${other.path}#part-2`}">${other.title}</a>`);
      }
      if (draw.next() < 0.2) links.push(`<a href="https://www.example.com/${draw.pick(VOCABULARY)}">Further reading</a>`);
      const parts = Array.from({ length: 3 + draw.int(4) }, (_, n) => `<h2 id="part-${n + 1}">Part ${n + 1}</h2>\n<p>${paragraph(3 + draw.int(4))}</p>`);
      put(p.path, p.title, `<h1>${p.title}</h1>\n<p>${paragraph(3)} Reference code ${p.keyword}.</p>\n${parts.join('\n')}\n<nav>${list(links)}</nav>`, p.keyword);
    });
    for (let k = 1; k <= sections; k++) {
      const members = pages.filter((p) => p.section === k);
      const links = ['<a href="../">All sections</a>', ...members.map((p) => `<a href="${p.path.slice(p.path.lastIndexOf('/') + 1)}">${p.title}</a>`)];
      if (k < sections) links.push(`<a href="../s${k + 1}/">Next section</a>`);
      const sk = keyword();
      put(`/generated/s${k}/`, `Generated section ${k}`, `<h1>Generated section ${k}</h1>\n<p>${paragraph(2)} Reference code ${sk}.</p>\n${list(links)}`, sk);
    }
    const ik = keyword();
    put('/generated/', 'Generated documentation', `<h1>Generated documentation</h1>\n<p>${paragraph(2)} Reference code ${ik}.</p>\n${list(Array.from({ length: sections }, (_, n) => `<a href="s${n + 1}/">Section ${n + 1}</a>`))}`, ik);
    alpha.set('/generated/sitemap.xml', this.sitemapResource('alpha', 'generated'));
  }

  private robots(lines: string[]): Special {
    const doc = this.generated('text/plain; charset=utf-8', `${lines.join('\n')}\n`, this.epoch);
    return { kind: 'special', serve: (req, res, rec) => this.sendDoc(req, res, rec, doc) };
  }

  private sitemapResource(site: WorldSite, name: string): Special {
    return {
      kind: 'special',
      serve: (req, res, rec) => {
        const entries = this.sitemapEntries(site, name);
        const xml = [
          '<?xml version="1.0" encoding="UTF-8"?>',
          '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
          ...entries.map((e) => `  <url>\n    <loc>${escapeXml(e.url)}</loc>\n    <lastmod>${w3c(e.lastmod)}</lastmod>\n  </url>`),
          '</urlset>',
          '',
        ].join('\n');
        this.sendDoc(req, res, rec, this.generated('application/xml; charset=utf-8', xml, this.sitemapLastmod(site, name)));
      },
    };
  }

  private sitemapIndexResource(site: WorldSite, children: string[]): Special {
    return {
      kind: 'special',
      serve: (req, res, rec) => {
        const xml = [
          '<?xml version="1.0" encoding="UTF-8"?>',
          '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
          ...children.map((c) => `  <sitemap>\n    <loc>${escapeXml(`${this.siteUrl(site)}/sitemaps/${c}.xml`)}</loc>\n    <lastmod>${w3c(this.sitemapLastmod(site, c))}</lastmod>\n  </sitemap>`),
          '</sitemapindex>',
          '',
        ].join('\n');
        this.sendDoc(req, res, rec, this.generated('application/xml; charset=utf-8', xml, Math.max(...children.map((c) => this.sitemapLastmod(site, c)))));
      },
    };
  }

  private sitemapEntries(site: WorldSite, name: string): Array<{ url: string; lastmod: number }> {
    const out: Array<{ url: string; lastmod: number }> = [];
    for (const [path, res] of this.sites.get(site)!) {
      if (res.kind === 'doc' && res.sitemap === name) out.push({ url: `${this.siteUrl(site)}${path}`, lastmod: res.lastmod });
    }
    return out;
  }

  /** The newest lastmod of a sitemap's entries, or of its last removal. */
  private sitemapLastmod(site: WorldSite, name: string): number {
    return Math.max(this.epoch - 365 * DAY, this.sitemapChanged.get(`${site}/${name}`) ?? 0, ...this.sitemapEntries(site, name).map((e) => e.lastmod));
  }

  private generated(contentType: string, text: string, lastmod: number): Doc {
    const body = Buffer.from(text, 'utf8');
    return { ...emptyDoc(contentType, lastmod), body, etag: etagOf(body) };
  }

  /** Fills in what follows from the body: ETag, and for HTML the title, language, text, robots meta, canonical, links. */
  private describe(site: WorldSite, path: string, doc: Doc): Doc {
    const out: Doc = { ...doc, etag: etagOf(doc.body) };
    const essence = doc.contentType.split(';')[0]!.trim().toLowerCase();
    const base = `${this.siteUrl(site)}${path}`;
    if (essence === 'text/html') {
      const html = decodeBody(doc.body, doc.contentType);
      out.title = decodeEntities(/<title>([\s\S]*?)<\/title>/i.exec(html)?.[1]?.trim() ?? '');
      out.lang = /<html[^>]*\blang="([^"]+)"/i.exec(html)?.[1] ?? 'en';
      out.text = htmlText(html);
      const robotsMeta = /<meta\s+name="robots"\s+content="([^"]*)"/i.exec(html)?.[1]?.toLowerCase() ?? '';
      const header = (doc.headers['x-robots-tag'] ?? '').toLowerCase();
      out.noindex = /\bnoindex\b/.test(robotsMeta) || /\bnoindex\b/.test(header);
      out.nofollow = /\bnofollow\b/.test(robotsMeta) || /\bnofollow\b/.test(header);
      const canonical = /<link\s+rel="canonical"\s+href="([^"]+)"/i.exec(html)?.[1];
      out.canonical = canonical ? new URL(decodeEntities(canonical), base).href : null;
      out.links = extractLinks(html, base);
    } else if (essence === 'text/plain') {
      const text = decodeBody(doc.body, doc.contentType);
      out.text = text.trim();
      out.title = text.split('\n')[0]!.trim();
      out.links = [];
    } else if (essence === 'application/json') {
      out.text = doc.body.toString('utf8');
    }
    return out;
  }

  /** Paths of `site` reachable from its home page through followable same-site links, redirects followed. */
  private reachable(site: WorldSite): Set<string> {
    const resources = this.sites.get(site)!;
    const origin = this.siteUrl(site);
    const seen = new Set<string>();
    const queue = ['/'];
    const resolve = (path: string): string | null => {
      for (let hops = 0; hops < 10; hops++) {
        const url = new URL(path, origin);
        const key = url.pathname + url.search;
        const res = resources.get(key) ?? (url.search ? resources.get(url.pathname) : undefined);
        const found = resources.has(key) ? key : url.pathname;
        if (!res) return null;
        if (res.kind === 'doc') return found;
        if (res.kind !== 'redirect') return null;
        const next = new URL(res.location, url);
        if (next.origin !== origin) return null;
        path = next.pathname + next.search;
      }
      return null;
    };
    while (queue.length > 0) {
      const path = resolve(queue.shift()!);
      if (path === null || seen.has(path)) continue;
      seen.add(path);
      const doc = resources.get(path) as Doc;
      if (doc.nofollow) continue;
      for (const link of doc.links) {
        const url = new URL(link.url);
        if (!link.nofollow && url.origin === origin) queue.push(url.pathname + url.search);
      }
    }
    return seen;
  }

  private locate(target: string): { site: WorldSite; path: string } {
    const url = new URL(target, this.siteUrl('alpha'));
    const site = this.siteOfHost(url.hostname);
    if (site === null || url.port !== String(this.port)) throw new Error(`${target} is not in the loopback web`);
    return { site, path: url.pathname + url.search };
  }

  private siteOfHost(hostname: string): WorldSite | null {
    const m = /^([a-z0-9-]+)\.localhost$/.exec(hostname);
    return m && this.sites.has(m[1]!) ? m[1]! : null;
  }

  private tick(): void {
    this.clock += HOUR;
  }
}

/** The special paths, all on alpha (`web.special` has them as absolute URLs). */
export const SPECIAL_PATHS = {
  slow: '/slow.html',
  huge: '/huge.html',
  hugeDeclared: '/huge-declared.bin',
  missing: '/docs/missing.html',
  gone: '/gone.html',
  redirect301: '/redirect/301',
  redirect302: '/redirect/302',
  redirect307: '/redirect/307',
  redirect308: '/redirect/308',
  redirectChain: '/redirect/chain/1',
  redirectLoop: '/redirect/loop/a',
  redirectCrossSite: '/redirect/cross-site',
  redirectDisallowed: '/redirect/disallowed',
  redirectMetadata: '/redirect/metadata',
  redirectPrivate: '/redirect/private',
  redirectOffWorld: '/redirect/off-world',
  movedPage: '/old-docs/page-3.html',
  pdf: '/files/report.pdf',
  text: '/files/notes.txt',
  json: '/files/data.json',
  image: '/files/pixel.png',
  noindex: '/meta/noindex.html',
  nofollowLinks: '/meta/nofollow-links.html',
  headerNoindex: '/meta/x-robots-noindex.html',
  print: '/docs/print/page-2.html',
  latin1: '/intl/latin1.html',
  metaCharset: '/intl/meta-charset.html',
  utf8: '/intl/utf8.html',
  oddLinks: '/docs/odd-links.html',
  orphan: '/orphan.html',
  disallowed: '/private/secret.html',
  allowedInDisallowed: '/private/open.html',
} as const;
export type SpecialName = keyof typeof SPECIAL_PATHS;

// ---- helpers ----

function robotsAllowed(site: WorldSite, path: string): boolean {
  if (site === 'delta') return false;
  if (site === 'beta') return !path.startsWith('/drafts/');
  if (site === 'alpha') {
    if (path.includes('?sessionid=')) return false;
    return !path.startsWith('/private/') || path === '/private/open.html';
  }
  return true;
}

function sitemapFor(site: WorldSite, path: string): string | null {
  if (site === 'gamma') return null;
  if (site === 'beta') return path.startsWith('/posts/') ? 'posts' : 'pages';
  return 'main';
}

function emptyDoc(contentType: string, lastmod: number): Doc {
  return {
    kind: 'doc',
    contentType,
    body: Buffer.alloc(0),
    lastmod,
    etag: '',
    title: '',
    lang: 'en',
    keyword: null,
    text: '',
    publishedDate: null,
    author: null,
    sitemap: null,
    headers: {},
    noindex: false,
    nofollow: false,
    canonical: null,
    links: [],
  };
}

function htmlDocument(p: { title: string; lang: string; body: string; canonical?: string; head?: string; charset?: string }): string {
  return [
    '<!doctype html>',
    `<html lang="${p.lang}">`,
    '<head>',
    `<meta charset="${p.charset ?? 'utf-8'}">`,
    `<title>${p.title}</title>`,
    ...(p.canonical ? [`<link rel="canonical" href="${escapeHtml(p.canonical)}">`] : []),
    ...(p.head ? [p.head] : []),
    '</head>',
    '<body>',
    p.body,
    '<footer><p>Served by the Lore loopback web.</p></footer>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

function errorPage(title: string, message: string): string {
  return htmlDocument({ title, lang: 'en', body: `<h1>${title}</h1>\n<p>${message}</p>` });
}

/** Every `<a href>` that resolves to http(s), fragment removed, with its nofollow. */
export function extractLinks(html: string, base: string): WebLink[] {
  const links: WebLink[] = [];
  for (const tag of html.matchAll(/<a\b([^>]*)>/gi)) {
    const attrs = new Map<string, string>();
    for (const m of tag[1]!.matchAll(/([a-zA-Z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/g)) {
      attrs.set(m[1]!.toLowerCase(), m[2] ?? m[3] ?? m[4] ?? '');
    }
    const href = attrs.get('href');
    if (href === undefined) continue;
    let url: URL;
    try {
      url = new URL(decodeEntities(href.trim()), base);
    } catch {
      continue;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') continue;
    url.hash = '';
    links.push({ url: url.href, nofollow: (attrs.get('rel') ?? '').toLowerCase().split(/\s+/).includes('nofollow') });
  }
  return links;
}

/** The visible text of an HTML document: no head, scripts or tags; entities decoded; whitespace collapsed. */
export function htmlText(html: string): string {
  const body = html.replace(/<head>[\s\S]*?<\/head>/i, ' ').replace(/<(script|style)\b[\s\S]*?<\/\1>/gi, ' ');
  return decodeEntities(body.replace(/<[^>]+>/g, ' ')).replace(/\s+/g, ' ').trim();
}

function decodeEntities(text: string): string {
  return text
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCodePoint(parseInt(n, 16)))
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function escapeXml(text: string): string {
  return escapeHtml(text).replace(/'/g, '&apos;');
}

function decodeBody(body: Buffer, contentType: string): string {
  const charset = /charset=([^;\s]+)/i.exec(contentType)?.[1]?.toLowerCase();
  if (charset === 'iso-8859-1' || charset === 'latin1') return body.toString('latin1');
  // A page that declares its charset only in <meta> is read the way it was written.
  if (!charset && /<meta charset="iso-8859-1">/i.test(body.toString('latin1'))) return body.toString('latin1');
  return body.toString('utf8');
}

function toBuffer(body: string | Buffer, contentType: string): Buffer {
  if (Buffer.isBuffer(body)) return body;
  return Buffer.from(body, /charset=iso-8859-1/i.test(contentType) ? 'latin1' : 'utf8');
}

function notModified(req: IncomingMessage, etag: string, lastmod: number): boolean {
  const inm = req.headers['if-none-match'];
  if (inm !== undefined) {
    const tags = inm.split(',').map((t) => t.trim().replace(/^W\//, ''));
    return tags.includes('*') || tags.includes(etag);
  }
  const ims = req.headers['if-modified-since'];
  if (ims === undefined) return false;
  const since = Date.parse(ims);
  return Number.isFinite(since) && Math.floor(lastmod / 1000) * 1000 <= since;
}

function etagOf(body: Buffer): string {
  return `"${createHash('sha256').update(body).digest('hex').slice(0, 20)}"`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** W3C datetime as sitemaps write it: seconds, UTC offset. */
function w3c(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

function cap(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

/** `to` relative to the directory of `from` (both absolute paths). */
function relativePath(from: string, to: string): string {
  const fromDir = from.split('/').slice(0, -1);
  const toParts = to.split('/');
  let common = 0;
  while (common < fromDir.length && common < toParts.length - 1 && fromDir[common] === toParts[common]) common++;
  return [...Array(fromDir.length - common).fill('..'), ...toParts.slice(common)].join('/');
}

/** A one-page PDF whose page shows `text` (Helvetica), with a correct cross-reference table. */
function pdf(text: string): Buffer {
  const escaped = text.replace(/[\\()]/g, (c) => `\\${c}`);
  const stream = `BT /F1 18 Tf 72 720 Td (${escaped}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    '<< /Title (Alpha loopback report) /Producer (Lore loopback web) >>',
  ];
  let out = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** A 2x2 RGB PNG. */
function png(): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(typed) >>> 0);
    return Buffer.concat([len, typed, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(2, 0);
  ihdr.writeUInt32BE(2, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const rows = Buffer.from([0, 0x1f, 0x6f, 0xb4, 0xe8, 0x9a, 0x3c, 0, 0xf2, 0xe9, 0xd8, 0x2b, 0x2b, 0x2b]);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}
