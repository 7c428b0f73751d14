import { gunzipSync } from 'node:zlib';
import { htmlToText } from '@lore/ai/html-text';
import { OutboundError, OutboundHttpClient, RobotsPolicy, TargetGuard, TargetRefusedError, unrequestedEncoding, type HostLookup, type OutboundResponse, type RobotsRules } from '@lore/outbound';
import { checkConnectorConfig } from '../domain/sources';
import { compareContent, conditionalHeaders, sitemapSaysUnchanged, validatorsFrom } from './change';
import { DEFAULT_FILE_READING, readFileText, type FileReading, type FileText } from './file-text';
import { parseSitemap, parseTextSitemap, type SitemapEntry } from './sitemap';
import { ConnectorRun, StopRun } from './run';
import { contentHash, idsOf, itemsOf, type ConnectorSource, type IdListing, type ListOptions, type PreviousState, type RunEvent, type RunOptions, type RunOutcome, type SkipReason, type SourceRun } from './source';
import { crawlScope, fileType, hasUnsupportedExtension, inScope, linksToFollow, readableType, readsWhole, type CrawlScope, type WebFileType } from './web-links';
import { decodePage, plainTextTitle, readHtml, robotsDirectives, titleFromUrl } from './web-page';

/**
 * The `web` connector source: one site, read through the shared outbound client (`@lore/outbound`: the SSRF guard
 * on every hop, robots.txt on every URL and redirect hop, bounded size and time). Modes, as the connector's
 * `web_connector_type` says:
 *
 * - `single`: the base URL only.
 * - `recursive`: breadth first from the base URL, following links of the same origin under the base URL's path
 *   (`crawlScope`), honouring robots.txt, `nofollow` (page and link), `noindex`, canonical links, a depth and a
 *   page limit.
 * - `sitemap`: the pages a sitemap lists (the base URL when it is one; else the `Sitemap:` lines of robots.txt;
 *   else `/sitemap.xml`), sitemap indexes followed; lastmod becomes `updated_at`.
 *
 * HTML and plain text are documents, and so are PDF, DOCX, CSV and JSON files, read with the shared extractor
 * (`file-text.ts`, as the file and Drive sources); images and other files are skipped. Politeness: robots.txt's
 * Crawl-delay (or `minDelayMs`) between request starts, at most two requests at a time, the client's user agent.
 * See "Connector sources" in docs/core.md.
 */

export interface WebSourceConfig {
  base_url: string;
  web_connector_type: 'single' | 'recursive' | 'sitemap';
}

/** The shared outbound trio a web source reads with (one per indexer process). */
export interface WebFetcher {
  guard: TargetGuard;
  client: OutboundHttpClient;
  robots: RobotsPolicy;
  close(): void;
}

export const WEB_USER_AGENT = 'LoreBot/1';

export interface WebFetcherOptions {
  userAgent?: string;
  /**
   * Lets the web source read loopback addresses and `localhost` names (local testing). Off by default; private
   * ranges and metadata addresses stay refused either way. The configuration that maps to it must refuse it in
   * production, as webhooks do.
   */
  allowLoopback?: boolean;
  /** Resolver for host names (tests: the loopback world's). */
  lookup?: HostLookup;
}

/** The guard, client and robots policy a web source reads with; two connections per site at most. */
export function createWebFetcher(options: WebFetcherOptions = {}): WebFetcher {
  const guard = new TargetGuard({ allowLoopback: options.allowLoopback ?? false, ...(options.lookup ? { lookup: options.lookup } : {}) });
  const client = new OutboundHttpClient({ guard, userAgent: options.userAgent ?? WEB_USER_AGENT, maxSocketsPerOrigin: 2 });
  return { guard, client, robots: new RobotsPolicy({ client }), close: () => client.close() };
}

export interface WebSourceOptions {
  /** Pages requested at most per run (documents, skipped pages and duplicates alike); the run stops with `max_pages`. */
  maxPages?: number;
  /** Links followed from the base URL at most (recursive). */
  maxDepth?: number;
  /** Requests in flight to the site: 1 or 2. */
  concurrency?: number;
  /** Spacing of request starts when robots.txt asks for no Crawl-delay (a longer Crawl-delay wins). */
  minDelayMs?: number;
  /** One request's time limit (the run's remaining time limits it too). */
  requestTimeoutMs?: number;
  /** Sitemap files read per run at most (an index and its children). */
  maxSitemaps?: number;
  /** Bytes of one sitemap file (after decompression). */
  maxSitemapBytes?: number;
  /**
   * URLs waiting to be read at most (default twice `maxPages`): a site whose pages link to more new pages than that
   * (a link farm, an endless calendar) has the rest of its links dropped, so a run's memory stays bounded, and the
   * run ends with `max_pages`.
   */
  maxQueued?: number;
  /**
   * How PDF, DOCX, CSV and JSON responses are read (the extractor's limits; default the memory uploads'): a PDF,
   * DOCX or JSON file is read whole up to `maxFileBytes` (larger: `too_large`), its text cut at `maxDocumentBytes`.
   */
  reading?: FileReading;
}

export const WEB_SOURCE_DEFAULTS = {
  maxPages: 10_000,
  maxDepth: 20,
  concurrency: 2,
  minDelayMs: 100,
  requestTimeoutMs: 30_000,
  maxSitemaps: 100,
  maxSitemapBytes: 50 * 1024 * 1024,
} as const;

/**
 * Binary by its first bytes: a NUL in the first 8 KiB (no text encoding a page is served in has one, but UTF-16,
 * which carries its byte order mark), or a file format's signature (PDF, ZIP, gzip).
 */
export function looksBinary(body: Buffer): boolean {
  const head = body.subarray(0, 8192);
  // UTF-16 with its byte order mark is text (decodePage reads it), NULs and all.
  const utf16 = (head[0] === 0xfe && head[1] === 0xff) || (head[0] === 0xff && head[1] === 0xfe);
  if (!utf16 && head.includes(0)) return true;
  const start = head.subarray(0, 5).toString('latin1');
  return start === '%PDF-' || start.startsWith('PK\x03\x04') || (head[0] === 0x1f && head[1] === 0x8b);
}

const ACCEPT_PAGE = 'text/html,application/xhtml+xml,text/plain;q=0.9,application/pdf;q=0.8,*/*;q=0.1';
const ACCEPT_SITEMAP = 'application/xml,text/xml;q=0.9,text/plain;q=0.5,*/*;q=0.1';
/** Fetch errors that may pass by the next run: a listing keeps the page (the indexer must not prune it for them). */
const TRANSIENT: ReadonlySet<string> = new Set(['timeout', 'network_error', 'aborted']);
/** Nesting of sitemap indexes followed (an index of indexes of sitemaps). */
const MAX_SITEMAP_NESTING = 3;

type Mode = 'load' | 'poll' | 'list';

interface Task {
  url: string;
  depth: number;
  /** Sitemap mode: the entry (its loc is the document's id). */
  entry?: SitemapEntry;
  /** A page the last run indexed, asked for with its validators. */
  known?: boolean;
}

/** What the engine hands the operations: a document, a skip, or (listing) an id that exists. */
type Event = RunEvent;

interface Fetched {
  task: Task;
  response?: OutboundResponse;
  error?: OutboundError;
}

export class WebSource implements ConnectorSource {
  readonly sourceType = 'web' as const;
  private readonly config: WebSourceConfig;
  private readonly options: Required<WebSourceOptions>;

  constructor(
    config: WebSourceConfig,
    private readonly fetcher: WebFetcher,
    options: WebSourceOptions = {},
  ) {
    const checked = checkConnectorConfig('web', config);
    if (!checked.ok) throw new Error(`invalid web connector configuration: ${checked.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    this.config = checked.value as unknown as WebSourceConfig;
    this.options = {
      maxPages: options.maxPages ?? WEB_SOURCE_DEFAULTS.maxPages,
      maxDepth: options.maxDepth ?? WEB_SOURCE_DEFAULTS.maxDepth,
      concurrency: Math.min(2, Math.max(1, Math.floor(options.concurrency ?? WEB_SOURCE_DEFAULTS.concurrency))),
      minDelayMs: Math.max(0, options.minDelayMs ?? WEB_SOURCE_DEFAULTS.minDelayMs),
      requestTimeoutMs: options.requestTimeoutMs ?? WEB_SOURCE_DEFAULTS.requestTimeoutMs,
      maxSitemaps: options.maxSitemaps ?? WEB_SOURCE_DEFAULTS.maxSitemaps,
      maxSitemapBytes: options.maxSitemapBytes ?? WEB_SOURCE_DEFAULTS.maxSitemapBytes,
      maxQueued: Math.max(1, options.maxQueued ?? 2 * (options.maxPages ?? WEB_SOURCE_DEFAULTS.maxPages)),
      reading: options.reading ?? DEFAULT_FILE_READING,
    };
  }

  async *loadAll(options: RunOptions): SourceRun {
    return yield* itemsOf(new Run(this.config, this.fetcher, this.options, 'load', options, new Date(0), new Map()).events());
  }

  async *pollSince(since: Date, previous: PreviousState, options: RunOptions): SourceRun {
    return yield* itemsOf(new Run(this.config, this.fetcher, this.options, 'poll', options, since, previous).events());
  }

  async *listIds(options: ListOptions): IdListing {
    return yield* idsOf(new Run(this.config, this.fetcher, this.options, 'list', options, new Date(0), options.previous ?? new Map()).events());
  }
}

/** One operation over the site: its limits, its politeness, what it has seen. */
class Run extends ConnectorRun {
  private scope: CrawlScope;
  private readonly base: string;
  private rules!: RobotsRules;
  private delayMs = 0;
  private nextStart = 0;
  /** URLs requested or queued. */
  private readonly seen = new Set<string>();
  /** Final URLs of pages handled (after redirects). */
  private readonly handled = new Set<string>();
  /** Content hash → the id that has it. */
  private readonly hashes = new Map<string, string>();
  /** Pages skipped for their canonical link → that link (a pair naming each other is read once, not never). */
  private readonly deferred = new Map<string, string>();
  /** Sitemap mode: the locs listed, so a canonical link to one of them marks a true duplicate. */
  private readonly listed = new Set<string>();
  private sitemapFailures = 0;
  /** Pages of a listing that failed for a reason that may pass (see `reseed`). */
  private transientFailures = 0;
  private reseeded = false;
  /** Page fetches started (the `maxPages` budget; sitemap files are not pages). */
  private pagesStarted = 0;
  /** Links were dropped because `maxQueued` URLs were already waiting. */
  private linksDropped = false;

  constructor(
    private readonly config: WebSourceConfig,
    private readonly fetcher: WebFetcher,
    private readonly options: Required<WebSourceOptions>,
    private readonly mode: Mode,
    run: RunOptions,
    private readonly since: Date,
    private readonly previous: PreviousState,
  ) {
    super(run);
    this.base = new URL(config.base_url).href;
    this.scope = crawlScope(this.base);
    // A sitemap may list the pages under its own directory (sitemaps.org): that is its scope.
    if (config.web_connector_type === 'sitemap' && namesSitemap(this.base)) this.scope = crawlScope(new URL('./', this.base).href);
  }

  protected override outcome(): RunOutcome {
    return super.outcome(this.sitemapFailures > 0 ? `${this.sitemapFailures} sitemap file(s) could not be read` : null);
  }

  async *events(): AsyncGenerator<Event, RunOutcome, undefined> {
    const timer = this.deadlineTimer();
    const inflight = new Map<number, Promise<Fetched>>();
    try {
      if (this.stop) return this.outcome();
      const frontier = await this.prepare();
      if (frontier === null || this.stop) return this.outcome();
      let next = 0;
      for (;;) {
        while (!this.stop && inflight.size < this.options.concurrency && frontier.length > 0) {
          const task = frontier.shift()!;
          const early = this.beforeFetch(task);
          if (early) {
            yield* this.emit(early);
            continue;
          }
          if (this.pagesStarted >= this.options.maxPages) {
            // The budget is spent: what is in flight still counts, nothing more starts.
            frontier.unshift(task);
            break;
          }
          this.pagesStarted += 1;
          const id = next++;
          inflight.set(id, this.fetchPage(task).then((f) => ({ ...f, id })));
        }
        if (this.stop) break;
        if (inflight.size === 0) {
          if (frontier.length > 0) {
            this.halt(new StopRun('max_pages', `the page limit of ${this.options.maxPages} was reached`));
            break;
          }
          if (this.linksDropped) {
            this.halt(new StopRun('max_pages', `the site links to more new pages than one run keeps waiting (${this.options.maxQueued}); the rest were not read`));
            break;
          }
          if (this.reseed(frontier)) continue;
          break;
        }
        const done = (await Promise.race(inflight.values())) as Fetched & { id: number };
        inflight.delete(done.id);
        if (this.stop) break;
        const events = await this.handle(done, frontier);
        if (this.stop) break;
        yield* this.emitAll(events);
      }
      return this.outcome();
    } finally {
      clearTimeout(timer);
      // A consumer that leaves early, a limit or a failure: whatever is in flight is cancelled, not awaited for.
      if (!this.stop && inflight.size > 0) this.halt(new StopRun('aborted', 'the consumer stopped reading'));
      this.controller.abort(this.stop ?? new StopRun('completed'));
      await Promise.allSettled(inflight.values());
      for (const undo of this.cleanup) undo();
    }
  }

  /**
   * A recursive listing that met pages it could not read (a timeout, a 503) may have missed what only they link
   * to: the known pages it has not reached are then asked for directly (conditionally), once, so a page is left
   * out only when it is known to be gone. True when there is something to ask.
   */
  private reseed(frontier: Task[]): boolean {
    if (this.mode !== 'list' || this.config.web_connector_type !== 'recursive' || this.transientFailures === 0 || this.reseeded) return false;
    this.reseeded = true;
    for (const id of this.previous.keys()) {
      if (!this.seen.has(id) && inScope(id, this.scope)) {
        this.seen.add(id);
        frontier.push({ url: id, depth: this.options.maxDepth, known: true });
      }
    }
    return frontier.length > 0;
  }

  /** Events out, in order, each as `emit` hands one out (none once the run stopped). */
  private async *emitAll(events: Event[]): AsyncGenerator<Event, void, undefined> {
    for (const event of events) yield* this.emit(event);
  }

  // ---- starting ----

  /** robots.txt, the crawl delay and the first tasks; null when the site cannot be read at all (the run failed). */
  private async prepare(): Promise<Task[] | null> {
    try {
      await this.untilHalted(this.fetcher.guard.resolve(this.base));
    } catch (err) {
      if (err instanceof TargetRefusedError) return this.fail(`the base URL is refused: ${err.message}`);
      if (err instanceof StopRun) return null;
      throw err;
    }
    const rules = await this.untilHalted(this.fetcher.robots.rulesFor(this.base)).catch((err: unknown) => {
      if (err instanceof StopRun) return null;
      throw err;
    });
    if (rules === null) return null;
    // RFC 9309: an unreachable robots.txt disallows the whole site. A run that reads nothing for that reason has
    // failed: it must not look like a site that has no pages (a listing would prune everything).
    if (rules.source === 'unreachable') return this.fail('robots.txt of the site cannot be read, so nothing may be fetched');
    this.rules = rules;
    this.delayMs = Math.max(this.options.minDelayMs, rules.crawlDelayMs(this.fetcher.client.robotsAgent) ?? 0);
    const agent = this.fetcher.client.robotsAgent;
    if (this.config.web_connector_type !== 'sitemap' && !rules.isAllowed(this.base, agent)) return this.fail('robots.txt does not allow the base URL');

    if (this.config.web_connector_type === 'sitemap') return this.sitemapTasks();
    const tasks: Task[] = [{ url: this.base, depth: 0 }];
    this.seen.add(this.base);
    // A recursive poll starts from every known page as well: a page that changed is found even when no page on
    // the way to it did, and a new page is found through the changed page that links to it.
    if (this.mode === 'poll' && this.config.web_connector_type === 'recursive') {
      for (const id of this.previous.keys()) {
        if (!this.seen.has(id) && inScope(id, this.scope)) {
          this.seen.add(id);
          tasks.push({ url: id, depth: 0, known: true });
        }
      }
    }
    return tasks;
  }

  private fail(detail: string): null {
    this.halt(new StopRun('failed', detail));
    return null;
  }

  // ---- sitemaps ----

  /** The sitemap files to start from: the base URL when it names one, else robots.txt's, else /sitemap.xml. */
  private sitemapRoots(): string[] {
    const base = new URL(this.base);
    if (namesSitemap(this.base)) return [this.base];
    const fromRobots = this.rules.sitemaps.filter((s) => /^https?:\/\//i.test(s) && URL.canParse(s)).map((s) => new URL(s).href);
    return fromRobots.length > 0 ? fromRobots : [`${base.origin}/sitemap.xml`];
  }

  private async sitemapTasks(): Promise<Task[] | null> {
    const queue = this.sitemapRoots().map((url) => ({ url, nesting: 0 }));
    const visited = new Set(queue.map((q) => q.url));
    const entries: SitemapEntry[] = [];
    let read = 0;
    while (queue.length > 0 && !this.stop) {
      const { url, nesting } = queue.shift()!;
      if (read >= this.options.maxSitemaps) break;
      read += 1;
      const parsed = await this.readSitemap(url);
      if (this.stop) return null;
      if (parsed === null) {
        this.sitemapFailures += 1;
        continue;
      }
      if (parsed.kind === 'urlset') {
        // No more URLs than a run keeps waiting: the rest could not be read in this run anyway, and a set of sitemaps
        // may list millions (a listing for pruning that cannot hold them all is incomplete, and fails).
        const room = this.options.maxQueued - entries.length;
        if (parsed.entries.length > room) {
          entries.push(...parsed.entries.slice(0, Math.max(0, room)));
          this.linksDropped = true;
          if (this.mode === 'list') return this.fail(`the sitemaps list more than ${this.options.maxQueued} URLs`);
          break;
        }
        entries.push(...parsed.entries);
      } else if (nesting < MAX_SITEMAP_NESTING) {
        for (const child of parsed.entries) {
          const href = URL.canParse(child.loc) ? new URL(child.loc).href : null;
          if (href && /^https?:/.test(href) && !visited.has(href)) {
            visited.add(href);
            queue.push({ url: href, nesting: nesting + 1 });
          }
        }
      }
    }
    if (read === this.sitemapFailures) return this.fail('no sitemap could be read');
    // A listing that missed a sitemap file would prune the pages it lists.
    if (this.sitemapFailures > 0 && this.mode === 'list') return this.fail(`${this.sitemapFailures} sitemap file(s) could not be read`);

    const tasks: Task[] = [];
    const agent = this.fetcher.client.robotsAgent;
    for (const entry of entries) {
      const loc = URL.canParse(entry.loc) ? new URL(entry.loc) : null;
      if (loc === null || (loc.protocol !== 'http:' && loc.protocol !== 'https:')) continue;
      loc.hash = '';
      const id = loc.href;
      if (this.seen.has(id)) continue;
      this.seen.add(id);
      this.listed.add(id);
      const task: Task = { url: id, depth: 0, entry: { ...entry, loc: id } };
      if (this.mode === 'list') {
        // A listing trusts the sitemap: what it lists (and robots.txt allows) exists; no page is fetched.
        if (inScope(id, this.scope) && !hasUnsupportedExtension(id) && this.rules.isAllowed(id, agent)) tasks.push(task);
        continue;
      }
      if (this.mode === 'poll' && sitemapSaysUnchanged(task.entry!, this.previous.get(id), this.since)) {
        this.counts.unchanged += 1;
        continue;
      }
      tasks.push(task);
    }
    return tasks;
  }

  /** One sitemap file, gzip or not, XML or plain text; null when it cannot be read or is not a sitemap. */
  private async readSitemap(url: string): Promise<{ kind: 'urlset' | 'sitemapindex'; entries: SitemapEntry[] } | null> {
    let res: OutboundResponse;
    try {
      await this.politely();
      this.counts.requests += 1;
      res = await this.fetcher.client.fetch({
        url,
        headers: { accept: ACCEPT_SITEMAP },
        robots: this.fetcher.robots,
        maxResponseBytes: this.options.maxSitemapBytes,
        oversize: 'truncate',
        timeoutMs: this.requestTimeout(),
        signal: this.controller.signal,
      });
    } catch (err) {
      if (this.stop || err instanceof StopRun) return null;
      if (err instanceof OutboundError) return null;
      throw err;
    }
    if (res.status < 200 || res.status >= 300) return null;
    let body = res.body;
    if (body[0] === 0x1f && body[1] === 0x8b) {
      try {
        body = gunzipSync(body, { maxOutputLength: this.options.maxSitemapBytes });
      } catch {
        return null;
      }
    }
    const text = decodePage(body, res.charset, false).text;
    const parsed = parseSitemap(text);
    if (parsed) return parsed;
    if (res.contentType === 'text/plain') return { kind: 'urlset', entries: parseTextSitemap(text) };
    return null;
  }

  // ---- pages ----

  /** Decisions made without a request: robots.txt, for a task that was never asked for. */
  private beforeFetch(task: Task): Event | null {
    if (this.mode === 'list' && this.config.web_connector_type === 'sitemap') return { kind: 'exists', id: task.url };
    if (task.entry && !inScope(task.url, this.scope)) return { kind: 'skipped', ref: task.url, reason: 'out_of_scope', detail: null };
    if (task.entry && hasUnsupportedExtension(task.url)) return { kind: 'skipped', ref: task.url, reason: 'unsupported_type', detail: null };
    if (!this.rules.isAllowed(task.url, this.fetcher.client.robotsAgent)) return { kind: 'skipped', ref: task.url, reason: 'robots', detail: null };
    return null;
  }

  /** Waits for the site's next request slot (Crawl-delay between request starts). */
  private async politely(): Promise<void> {
    const now = performance.now();
    const at = Math.max(now, this.nextStart);
    this.nextStart = at + this.delayMs;
    if (at > now) await this.untilHalted(new Promise<void>((r) => setTimeout(r, at - now).unref()));
  }

  private requestTimeout(): number {
    return Math.max(1, Math.min(this.options.requestTimeoutMs, Math.ceil(this.deadline - performance.now())));
  }

  /** Never rejects: the response, or the error it met. */
  private async fetchPage(task: Task): Promise<Fetched> {
    try {
      await this.politely();
      this.counts.requests += 1;
      const conditional = this.mode === 'poll' || task.known === true || (this.mode === 'list' && this.config.web_connector_type === 'single');
      const response = await this.fetcher.client.fetch({
        url: task.url,
        headers: { accept: ACCEPT_PAGE, ...(conditional ? conditionalHeaders(this.previous.get(task.url)) : {}) },
        robots: this.fetcher.robots,
        maxResponseBytes: Math.max(1, this.limits.maxDocumentBytes),
        maxResponseBytesFor: (head) => this.bodyLimit(head),
        oversize: 'truncate',
        timeoutMs: this.requestTimeout(),
        signal: this.controller.signal,
      });
      return { task, response };
    } catch (err) {
      if (err instanceof OutboundError) return { task, error: err };
      if (err instanceof StopRun) return { task, error: new OutboundError('aborted', err.message) };
      throw err;
    }
  }

  /**
   * How much of a response is read: a PDF, DOCX or JSON file whole, up to the extractor's file limit (one that says
   * it is larger, only a byte: it is skipped as `too_large` either way); anything else up to the document limit.
   */
  private bodyLimit(head: { url: string; status: number; headers: Record<string, unknown>; contentType: string | null }): number {
    const text = Math.max(1, this.limits.maxDocumentBytes);
    if (head.status < 200 || head.status >= 300 || readableType(head.contentType) !== null) return text;
    const file = fileType(head.contentType, head.url);
    if (file === null || !readsWhole(file)) return text;
    const declared = Number(head.headers['content-length']);
    const max = this.options.reading.maxFileBytes;
    return Number.isFinite(declared) && declared > max ? 1 : max;
  }

  /** What one fetched page means for the run: events, and links for the frontier. */
  private async handle(done: Fetched, frontier: Task[]): Promise<Event[]> {
    const { task } = done;
    const isBase = task.url === this.base && task.depth === 0 && this.config.web_connector_type !== 'sitemap';
    const skip = (reason: SkipReason, detail: string | null = null, ref = task.url): Event[] => [{ kind: 'skipped', ref, reason, detail }];
    if (done.error) {
      const kind = done.error.kind;
      // A run whose time ran out in the middle of a fetch stops for that reason, not for the fetch's.
      if (performance.now() >= this.deadline) {
        this.halt(new StopRun('max_time', `the time limit of ${this.limits.maxTotalMs} ms was reached`));
        return [];
      }
      if (isBase) {
        this.fail(kind === 'disallowed' ? 'robots.txt does not allow the base URL (or a redirect of it)' : `the base URL could not be fetched (${kind})`);
        return [];
      }
      // A listing keeps a page that failed for a reason that may pass: only a page known to be gone is pruned.
      if (this.mode === 'list' && TRANSIENT.has(kind)) {
        this.transientFailures += 1;
        return [{ kind: 'exists', id: task.url }];
      }
      return skip(kind === 'disallowed' ? 'robots' : 'failed', kind);
    }
    const res = done.response!;
    const finalUrl = res.url;
    if (res.status === 304) {
      // Only a conditional request (a known page) gets one: the page exists and has not changed.
      this.handled.add(finalUrl);
      if (this.mode === 'list') return [{ kind: 'exists', id: this.idOf(task, finalUrl) }];
      this.counts.unchanged += 1;
      return [];
    }
    if (res.status < 200 || res.status >= 300) {
      const gone = res.status === 404 || res.status === 410;
      if (isBase && !gone) {
        this.fail(`the base URL answered ${res.status}`);
        return [];
      }
      if (this.mode === 'list' && (res.status >= 500 || res.status === 429)) {
        this.transientFailures += 1;
        return [{ kind: 'exists', id: task.url }];
      }
      return skip(gone ? 'not_found' : 'failed', `status ${res.status}`);
    }
    if (isBase && task.depth === 0 && res.redirects.length > 0 && this.config.web_connector_type === 'recursive') {
      // `/docs` → `/docs/`, http → https: the crawl reads under where the base URL leads.
      this.scope = crawlScope(finalUrl);
    }
    if (this.config.web_connector_type === 'recursive' && !inScope(finalUrl, this.scope)) return skip('out_of_scope', null);
    if (this.handled.has(finalUrl)) return skip('duplicate', 'already read under another address');
    this.handled.add(finalUrl);

    // Lore asks for no compression (`accept-encoding: identity`): a body encoded anyway is bytes no reader here
    // decodes, and would be indexed as noise.
    const encoding = unrequestedEncoding(res);
    if (encoding !== null) return skip('unsupported_type', `a body encoded ${encoding}, which was not asked for`);
    const type = readableType(res.contentType);
    const file = type === null ? fileType(res.contentType, finalUrl) : null;
    if (type === null && file === null) return skip('unsupported_type', res.contentType ?? 'no content type');
    // Binary bytes under a text type (a PDF served as text/html): not text to index.
    if (type !== null && looksBinary(res.body)) return skip('unsupported_type', `binary content served as ${res.contentType ?? 'text'}`);
    const agent = this.fetcher.client.robotsAgent;
    const header = res.headers['x-robots-tag'];
    const headerValues = header === undefined ? [] : Array.isArray(header) ? header : [header];
    if (type === null) return this.readFile(task, res, file!, robotsDirectives([], headerValues, agent).noindex);
    const decoded = decodePage(res.body, res.charset, type === 'html');
    const facts = type === 'html' ? readHtml(decoded.text, finalUrl, agent) : null;
    const directives = robotsDirectives(facts?.robotsMeta ?? [], headerValues, agent);

    if (facts && this.config.web_connector_type === 'recursive' && task.depth < this.options.maxDepth) {
      for (const url of linksToFollow(facts.links, this.scope, directives.nofollow)) {
        if (this.seen.has(url)) continue;
        if (frontier.length >= this.options.maxQueued) {
          this.linksDropped = true;
          break;
        }
        this.seen.add(url);
        frontier.push({ url, depth: task.depth + 1 });
      }
    }
    // A page whose canonical link names another page of the connector is that page's copy: the other is read.
    const canonical = facts?.canonical ?? null;
    if (canonical !== null && canonical !== finalUrl && this.deferred.get(canonical) !== finalUrl) {
      const recursive = this.config.web_connector_type === 'recursive' && inScope(canonical, this.scope);
      const inSitemap = this.config.web_connector_type === 'sitemap' && this.listed.has(canonical) && canonical !== task.url;
      if (recursive || inSitemap) {
        this.deferred.set(finalUrl, canonical);
        if (recursive && !this.seen.has(canonical)) {
          if (frontier.length >= this.options.maxQueued) this.linksDropped = true;
          else {
            this.seen.add(canonical);
            frontier.push({ url: canonical, depth: task.depth });
          }
        }
        return skip('duplicate', 'its canonical link names another page');
      }
    }
    if (directives.noindex) return skip('noindex');

    const id = this.idOf(task, finalUrl);
    let title: string;
    let text: string;
    if (type === 'html') {
      const read = htmlToText(decoded.text);
      text = read.text;
      title = read.title ?? titleFromUrl(id);
    } else {
      text = decoded.text.replace(/\r\n?/g, '\n').trim();
      title = plainTextTitle(text) ?? titleFromUrl(id);
    }
    if (!text) return skip('empty');
    const metadata: Record<string, string> = { content_type: res.contentType ?? '' };
    if (facts?.lang) metadata.lang = facts.lang;
    return this.document(task, res, id, title, text, metadata, res.truncated);
  }

  /**
   * A PDF, DOCX, CSV or JSON response, read with the shared extractor (`file-text.ts`) and its limits: one that
   * cannot be cut and arrived cut is `too_large`; a file it cannot read is skipped with its reason. Files have no
   * links and no canonical link; `X-Robots-Tag: noindex` applies. A listing does not extract: the file exists.
   */
  private async readFile(task: Task, res: OutboundResponse, type: WebFileType, noindex: boolean): Promise<Event[]> {
    const skip = (reason: SkipReason, detail: string | null = null): Event[] => [{ kind: 'skipped', ref: task.url, reason, detail }];
    if (noindex) return skip('noindex');
    const id = this.idOf(task, res.url);
    if (this.mode === 'list') return [{ kind: 'exists', id }];
    let read: FileText;
    try {
      // PDF and DOCX parse in the extractor's worker threads (bounded by its own timeout); the run's limits stop the wait.
      read = await this.untilHalted(
        readFileText({ name: titleFromUrl(res.url), contentType: res.contentType, charset: res.charset, data: res.body, cut: res.truncated }, this.limits.maxDocumentBytes, this.options.reading),
      );
    } catch (err) {
      if (err instanceof StopRun) return [];
      throw err;
    }
    if (!read.ok) return skip(read.reason, read.detail);
    const title = read.title ?? (read.kind === 'text' ? plainTextTitle(read.text) : null) ?? titleFromUrl(id);
    return this.document(task, res, id, title, read.text, { content_type: res.contentType ?? '', file_type: type, extractor: read.extractor }, read.truncated);
  }

  /** A page's or file's document, unless it is a copy of another of the run or (a poll) unchanged; a listing's id. */
  private document(task: Task, res: OutboundResponse, id: string, title: string, text: string, metadata: Record<string, string>, truncated: boolean): Event[] {
    const hash = contentHash(title, text);
    const twin = this.hashes.get(hash);
    if (twin !== undefined && twin !== id) return [{ kind: 'skipped', ref: task.url, reason: 'duplicate', detail: 'the same content as another page' }];
    this.hashes.set(hash, id);

    if (this.mode === 'list') return [{ kind: 'exists', id }];
    const previous = this.previous.get(id);
    if (this.mode === 'poll' && compareContent(previous, hash) === 'unchanged') {
      this.counts.unchanged += 1;
      return [];
    }
    const lastModified = Date.parse(typeof res.headers['last-modified'] === 'string' ? res.headers['last-modified'] : '');
    if (truncated) metadata.truncated = 'true';
    return [
      {
        kind: 'document',
        document: {
          id,
          title,
          text,
          link: id,
          source_type: 'web',
          updated_at: task.entry?.lastmod ?? (Number.isFinite(lastModified) ? new Date(lastModified) : null),
          primary_owners: null,
          secondary_owners: null,
          metadata,
          content_hash: hash,
        },
        validators: validatorsFrom(res.headers, hash),
        truncated,
      },
    ];
  }

  /** A document's id: the sitemap's loc in sitemap mode (what the listing names), else where the page was read. */
  private idOf(task: Task, finalUrl: string): string {
    return task.entry ? task.url : finalUrl;
  }
}

/** A base URL that names a sitemap file itself rather than a site (`…/sitemap.xml`, `…/sitemap_index.xml.gz`, `…/urls.txt`). */
function namesSitemap(url: string): boolean {
  return /sitemap|\.xml(\.gz)?$|\.txt$/i.test(new URL(url).pathname);
}
