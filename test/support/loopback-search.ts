import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SITE_NAMES, type LoopbackWeb, type SiteName, type WebPage } from './loopback-web';

/**
 * The test world's web search: a SearXNG-compatible endpoint on a loopback port whose index is the pages of a
 * `LoopbackWeb`, so every result URL can be fetched from that world. For web research and the agentic crawler.
 * See "The loopback test world" in docs/outbound.md.
 *
 * It speaks SearXNG's search API as documented (docs.searxng.org, "Search API"): `GET` or `POST` (form fields win
 * over query parameters) on `/search`, and on `/`, which answers 308 to `/search` when a query is given; `q`,
 * `format`, `pageno`, `categories`, `language`, `time_range`, `safesearch` (and `engines`, accepted and ignored).
 * Like an instance whose `search.formats` is `[json]`: `format=json` answers `application/json`; any other format,
 * or none (SearXNG's default is html), answers 403, as does `format=json` when the instance is started with
 * `{ json: false }` (JSON off, as on many public instances). A missing `q` answers 400 `{"error": "No query"}`; an
 * invalid `pageno`, `language`, `safesearch` or `time_range` 400 `{"error": "Invalid value … for parameter …"}`.
 *
 * The JSON body has SearXNG's fields: `query`, `number_of_results` (here the number of matches; real instances
 * often say 0, and releases after May 2026 drop the field: `{ numberOfResults: false }` mimics those), `results`,
 * `answers`, `corrections`, `infoboxes`, `suggestions`, `unresponsive_engines` ([engine, message] pairs). Results carry the fields SearXNG gives a result an engine
 * returned as a plain record (`url`, `title`, `content`, `engine`, `engines`, `template`, `parsed_url` as Python's
 * six-part urlparse, `img_src`, `thumbnail`, `priority`, `positions`, `score` = 1/position, `category`,
 * `publishedDate`, and `pubdate` and `author` when there is a publication date).
 *
 * The index: every page of the world that is not noindex (results may well point at pages robots.txt forbids:
 * delta's, alpha's /private/secret.html; a fetcher must ask robots.txt itself), taken at `start()` and again at
 * `reindex()` only, so a page the world removed afterwards is a stale result (410), as with a real engine.
 * Matching: every query term in the title or text (a `site:<host>` term filters by host), ranked by term hits (a
 * title hit counts 3), then URL; 10 results a page. Categories: `general` (HTML, text, PDF), `news` (beta's posts),
 * `files` (PDF, JSON), `images` (the PNG). `language` keeps pages whose `<html lang>` has that primary subtag;
 * `time_range` keeps pages published (or else last modified) within a day, week, month or year of the world clock.
 * Derived extras: a correction when a term is unknown and one letter from a known one, suggestions from the
 * matching titles, an infobox when the query names a site; `script(q, …)` adds answers and anything else for one
 * query. `failNext(n, status)` makes the next n requests answer 429 or 503 (rate limiting, an overloaded
 * instance); `requests` records every request; `answer(params)` gives the JSON a request would get, without HTTP.
 */

export interface SearxngResult {
  url: string;
  title: string;
  content: string;
  engine: string;
  engines: string[];
  template: string;
  parsed_url: [scheme: string, netloc: string, path: string, params: string, query: string, fragment: string];
  img_src: string;
  thumbnail: string;
  priority: '' | 'high' | 'low';
  positions: number[];
  score: number;
  category: string;
  publishedDate: string | null;
  pubdate?: string;
  author?: string;
}

export interface SearxngAnswer {
  url: string | null;
  engine: string;
  parsed_url: SearxngResult['parsed_url'] | null;
  template: string;
  answer: string;
}

export interface SearxngInfobox {
  infobox: string;
  id: string;
  content: string;
  img_src: string | null;
  urls: Array<{ title: string; url: string }>;
  attributes: Array<{ label: string; value: string }>;
  engine: string;
  engines: string[];
  url: string | null;
  template: string;
  parsed_url: null;
  title: string;
  thumbnail: string;
  priority: string;
  /** SearXNG's default for a plain record that never got positions is an empty string. */
  positions: number[] | '';
  score: number;
  category: string;
  publishedDate: string | null;
}

export interface SearxngResponse {
  query: string;
  number_of_results?: number;
  results: SearxngResult[];
  answers: SearxngAnswer[];
  corrections: string[];
  infoboxes: SearxngInfobox[];
  suggestions: string[];
  unresponsive_engines: Array<[engine: string, message: string]>;
}

export interface SearchRequest {
  method: string;
  /** Path and query as sent. */
  path: string;
  /** The parameters as SearXNG reads them: query string, overridden by form fields. */
  params: Record<string, string>;
  headers: IncomingHttpHeaders;
  time: number;
  status: number;
}

export interface LoopbackSearchOptions {
  /** Results per page. Default 10. */
  pageSize?: number;
  /** Whether `format=json` is enabled. Default true. */
  json?: boolean;
  /** Whether the answer carries `number_of_results` (older SearXNG releases). Default true. */
  numberOfResults?: boolean;
}

export interface ScriptedExtras {
  answers?: string[];
  corrections?: string[];
  suggestions?: string[];
  infoboxes?: SearxngInfobox[];
}

interface Entry {
  page: WebPage;
  categories: string[];
  title: Map<string, number>;
  text: Map<string, number>;
  date: number;
}

export const SEARXNG_CATEGORIES = ['general', 'images', 'videos', 'news', 'map', 'music', 'it', 'science', 'files', 'social media'];
const ENGINE = 'loopback';
const TIME_RANGES: Record<string, number> = { day: 1, week: 7, month: 31, year: 365 };
const LANGUAGE_CODE = /^[a-z]{2,3}(-[a-zA-Z]{2})?$/;
const STOPWORDS = new Set(['the', 'of', 'and', 'on', 'a', 'an', 'in', 'to', 'notes', 'page', 'wiki']);
const DAY = 24 * 3600_000;

export class LoopbackSearch {
  server!: Server;
  /** `http://127.0.0.1:<port>`; the API is `${url}/search`. */
  url = '';
  readonly requests: SearchRequest[] = [];
  /** Reported in `unresponsive_engines` of every answer, e.g. `[['wikipedia', 'timeout']]`. */
  unresponsiveEngines: Array<[string, string]> = [];

  private readonly pageSize: number;
  private readonly json: boolean;
  private readonly numberOfResults: boolean;
  private index: Entry[] = [];
  private vocabulary = new Map<string, number>();
  private readonly failures: Array<{ status: number; retryAfterSeconds: number | null }> = [];
  private readonly scripted = new Map<string, ScriptedExtras>();

  constructor(
    private readonly web: LoopbackWeb,
    options: LoopbackSearchOptions = {},
  ) {
    this.pageSize = options.pageSize ?? 10;
    this.json = options.json ?? true;
    this.numberOfResults = options.numberOfResults ?? true;
  }

  async start(): Promise<this> {
    this.reindex();
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handle(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Takes the world's pages as they are now (the index is otherwise the one taken at start). */
  reindex(): void {
    this.index = this.web
      .pages()
      .filter((p) => !p.noindex)
      .map((page) => ({
        page,
        categories: categoriesOf(page),
        title: counts(page.title),
        text: counts(page.text),
        date: Date.parse(page.publishedDate ?? page.lastmod),
      }));
    this.vocabulary = new Map();
    for (const e of this.index) {
      for (const term of new Set([...e.title.keys(), ...e.text.keys()])) this.vocabulary.set(term, (this.vocabulary.get(term) ?? 0) + 1);
    }
  }

  /** The next `n` requests answer `status` (429 by default; 503 for an overloaded instance). */
  failNext(n: number, status: 429 | 503 = 429, options: { retryAfterSeconds?: number } = {}): void {
    for (let i = 0; i < n; i++) this.failures.push({ status, retryAfterSeconds: options.retryAfterSeconds ?? null });
  }

  /** Extras for one query string (exactly as sent in `q`): answers, corrections, suggestions, infoboxes. */
  script(query: string, extras: ScriptedExtras): void {
    this.scripted.set(query, extras);
  }

  /** The answer `GET /search?q=…&format=json` would give now (without recording a request). */
  answer(params: Record<string, string>): SearxngResponse {
    const parsed = this.parse(params);
    if ('error' in parsed) throw new Error(parsed.error);
    return this.search(parsed);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  private handle(req: IncomingMessage, res: ServerResponse, body: string): void {
    const url = new URL(req.url ?? '/', 'http://loopback.invalid');
    const params: Record<string, string> = Object.fromEntries(url.searchParams);
    if (req.method === 'POST' && /^application\/x-www-form-urlencoded/i.test(req.headers['content-type'] ?? '')) {
      Object.assign(params, Object.fromEntries(new URLSearchParams(body)));
    }
    const rec: SearchRequest = { method: req.method ?? '', path: req.url ?? '', params, headers: req.headers, time: performance.timeOrigin + performance.now(), status: 0 };
    this.requests.push(rec);
    const send = (status: number, contentType: string, text: string, headers: Record<string, string> = {}) => {
      rec.status = status;
      res.writeHead(status, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(text)), ...headers });
      res.end(req.method === 'HEAD' ? undefined : text);
    };
    const failure = this.failures.shift();
    if (failure) {
      const retry: Record<string, string> = failure.retryAfterSeconds === null ? {} : { 'retry-after': String(failure.retryAfterSeconds) };
      return failure.status === 429
        ? send(429, 'text/plain; charset=utf-8', 'Too Many Requests\n', retry)
        : send(failure.status, 'text/html; charset=utf-8', '<!doctype html><title>503 Service Unavailable</title><h1>Service Unavailable</h1>\n', retry);
    }
    if (req.method !== 'GET' && req.method !== 'POST' && req.method !== 'HEAD') {
      return send(405, 'text/html; charset=utf-8', '<!doctype html><title>405 Method Not Allowed</title><h1>Method Not Allowed</h1>\n', { allow: 'GET, POST' });
    }
    if (url.pathname === '/healthz') return send(200, 'text/plain; charset=utf-8', 'OK');
    if (url.pathname === '/') {
      if (params.q) return send(308, 'text/html; charset=utf-8', '', { location: `/search${url.search}` });
      return send(200, 'text/html; charset=utf-8', '<!doctype html><title>Loopback search</title><form action="/search"><input name="q"></form>\n');
    }
    if (url.pathname !== '/search') return send(404, 'text/html; charset=utf-8', '<!doctype html><title>404 Not Found</title><h1>Not Found</h1>\n');

    // SearXNG: an unknown format is html; a format the instance has not enabled is 403, before anything else.
    const format = ['html', 'json', 'csv', 'rss'].includes(params.format ?? '') ? params.format! : 'html';
    if (format !== 'json' || !this.json) return send(403, 'text/html; charset=utf-8', '<!doctype html><title>403 Forbidden</title><h1>Forbidden</h1><p>This format is not enabled here.</p>\n');
    const parsed = this.parse(params);
    if ('error' in parsed) return send(400, 'application/json', JSON.stringify({ error: parsed.error }));
    return send(200, 'application/json', JSON.stringify(this.search(parsed)));
  }

  private parse(params: Record<string, string>): Query | { error: string } {
    const q = params.q ?? '';
    if (q === '') return { error: 'No query' };
    const invalid = (name: string, value: string) => ({ error: value === '' ? `Empty ${name} parameter` : `Invalid value ${value} for parameter ${name}` });
    const pageno = params.pageno ?? '1';
    if (!/^\d+$/.test(pageno) || Number(pageno) < 1) return invalid('pageno', pageno);
    const language = params.language ?? 'auto';
    if (!LANGUAGE_CODE.test(language) && language !== 'auto') return invalid('language', language);
    const safesearch = params.safesearch ?? '0';
    if (!/^\d+$/.test(safesearch) || Number(safesearch) > 2) return invalid('safesearch', safesearch);
    const range = params.time_range === undefined || params.time_range === '' || params.time_range === 'None' ? null : params.time_range;
    if (range !== null && !(range in TIME_RANGES)) return invalid('time_range', range);
    // Unknown categories are dropped; none left means general. `category_<name>=on` form fields count too.
    const categories = (params.categories ?? '').split(',').map((c) => c.trim()).filter((c) => SEARXNG_CATEGORIES.includes(c));
    for (const [name, value] of Object.entries(params)) {
      const c = name.startsWith('category_') ? name.slice(9) : null;
      if (c && SEARXNG_CATEGORIES.includes(c) && value !== 'off' && !categories.includes(c)) categories.push(c);
    }
    return { q, pageno: Number(pageno), language, timeRange: range, categories: categories.length > 0 ? categories : ['general'] };
  }

  private search(query: Query): SearxngResponse {
    const words = query.q.trim().split(/\s+/).filter(Boolean);
    const sites = words.filter((w) => w.toLowerCase().startsWith('site:')).map((w) => w.slice(5).toLowerCase());
    const terms = words.filter((w) => !w.toLowerCase().startsWith('site:')).flatMap((w) => tokens(w));
    const now = this.web.now();
    const matches: Array<{ entry: Entry; hits: number; category: string }> = [];
    for (const entry of this.index) {
      const category = query.categories.find((c) => entry.categories.includes(c));
      if (!category) continue;
      const host = new URL(entry.page.url).hostname;
      if (sites.length > 0 && !sites.some((s) => host === s || host.endsWith(`.${s}`))) continue;
      if (query.language !== 'auto' && query.language !== 'all' && entry.page.lang.split('-')[0] !== query.language.split('-')[0]) continue;
      if (query.timeRange !== null && entry.date < now - TIME_RANGES[query.timeRange]! * DAY) continue;
      let hits = 0;
      let all = true;
      for (const term of terms) {
        const h = 3 * (entry.title.get(term) ?? 0) + (entry.text.get(term) ?? 0);
        if (h === 0) all = false;
        hits += h;
      }
      if (all) matches.push({ entry, hits, category });
    }
    matches.sort((a, b) => b.hits - a.hits || (a.entry.page.url < b.entry.page.url ? -1 : 1));
    const pageMatches = matches.slice((query.pageno - 1) * this.pageSize, query.pageno * this.pageSize);
    const results = pageMatches.map(({ entry, category }, i) => this.result(entry.page, category, i + 1, terms));

    const scripted = this.scripted.get(query.q) ?? {};
    const corrections = scripted.corrections ?? this.corrections(terms, words);
    const infoboxes = [...this.infoboxes(query.q), ...(scripted.infoboxes ?? [])];
    const response: SearxngResponse = {
      query: query.q,
      ...(this.numberOfResults ? { number_of_results: matches.length } : {}),
      results,
      answers: (scripted.answers ?? []).map((answer) => ({ url: null, engine: ENGINE, parsed_url: null, template: 'answer/legacy.html', answer })),
      corrections,
      infoboxes,
      suggestions: scripted.suggestions ?? this.suggestions(matches.map((m) => m.entry), terms, query.q),
      unresponsive_engines: [...this.unresponsiveEngines].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
    };
    return response;
  }

  private result(page: WebPage, category: string, position: number, terms: string[]): SearxngResult {
    const u = new URL(page.url);
    const image = category === 'images';
    return {
      url: page.url,
      title: page.title,
      content: snippet(page.text, terms),
      engine: ENGINE,
      engines: [ENGINE],
      template: image ? 'images.html' : 'default.html',
      parsed_url: [u.protocol.slice(0, -1), u.host, u.pathname, '', u.search.slice(1), ''],
      img_src: image ? page.url : '',
      thumbnail: image ? page.url : '',
      priority: '',
      positions: [position],
      score: 1 / position,
      category,
      publishedDate: page.publishedDate === null ? null : pythonIso(page.publishedDate),
      ...(page.publishedDate === null ? {} : { pubdate: pythonPubdate(page.publishedDate) }),
      ...(page.author === null ? {} : { author: page.author }),
    };
  }

  /** The query with each unknown term replaced by the most common known term one edit away, if any changed. */
  private corrections(terms: string[], words: string[]): string[] {
    let changed = false;
    const fixed = words.map((word) => {
      if (word.toLowerCase().startsWith('site:')) return word;
      return tokens(word)
        .map((term) => {
          if (this.vocabulary.has(term) || !terms.includes(term)) return term;
          let best: string | null = null;
          for (const [known, df] of this.vocabulary) {
            if (!oneEditApart(term, known)) continue;
            const bestDf = best === null ? -1 : this.vocabulary.get(best)!;
            if (df > bestDf || (df === bestDf && known < best!)) best = known;
          }
          if (best === null) return term;
          changed = true;
          return best;
        })
        .join(' ');
    });
    return changed ? [fixed.join(' ')] : [];
  }

  private suggestions(entries: Entry[], terms: string[], q: string): string[] {
    const freq = new Map<string, number>();
    for (const e of entries) {
      for (const t of e.title.keys()) if (!terms.includes(t) && !STOPWORDS.has(t) && t.length > 2 && !/\d/.test(t)) freq.set(t, (freq.get(t) ?? 0) + 1);
    }
    return [...freq.entries()]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, 3)
      .map(([t]) => `${q.trim()} ${t}`);
  }

  private infoboxes(q: string): SearxngInfobox[] {
    const name = q.trim().toLowerCase();
    if (!(SITE_NAMES as readonly string[]).includes(name)) return [];
    const site = name as SiteName;
    const home = `${this.web.siteUrl(site)}/`;
    const pages = this.web.pages(site);
    const homePage = pages.find((p) => p.path === '/');
    return [
      {
        infobox: homePage?.title ?? site,
        id: home,
        content: homePage ? snippet(homePage.text, []) : '',
        img_src: null,
        urls: [{ title: 'Home page', url: home }],
        attributes: [{ label: 'Pages', value: String(pages.length) }],
        engine: ENGINE,
        engines: [ENGINE],
        url: null,
        template: 'default.html',
        parsed_url: null,
        title: '',
        thumbnail: '',
        priority: '',
        positions: '',
        score: 0,
        category: '',
        publishedDate: null,
      },
    ];
  }
}

interface Query {
  q: string;
  pageno: number;
  language: string;
  timeRange: string | null;
  categories: string[];
}

function categoriesOf(page: WebPage): string[] {
  const type = page.contentType.split(';')[0]!.trim();
  if (type === 'image/png') return ['images'];
  if (type === 'application/json') return ['files'];
  if (type === 'application/pdf') return ['general', 'files'];
  return page.publishedDate !== null ? ['general', 'news'] : ['general'];
}

function tokens(text: string): string[] {
  return text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function counts(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of tokens(text)) out.set(t, (out.get(t) ?? 0) + 1);
  return out;
}

/** About 200 characters of `text` from the start of the sentence holding the first term (or from the start). */
function snippet(text: string, terms: string[]): string {
  const lower = text.toLowerCase();
  let at = -1;
  for (const t of terms) {
    const i = lower.search(new RegExp(`(?<![\\p{L}\\p{N}])${t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\p{L}\\p{N}])`, 'u'));
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  const start = at <= 0 ? 0 : Math.max(0, text.lastIndexOf('. ', at) + 2);
  const cut = text.slice(start, start + 200);
  return cut.length < text.length - start ? cut.replace(/\s+\S*$/, '') : cut;
}

function oneEditApart(a: string, b: string): boolean {
  if (a === b || Math.abs(a.length - b.length) > 1) return false;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (a.length === b.length) return a.slice(i + 1) === b.slice(i + 1);
  return a.length > b.length ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
}

/** Python's `datetime.isoformat()` of an aware UTC datetime, as SearXNG's JSON encoder writes `publishedDate`. */
function pythonIso(isoDate: string): string {
  return new Date(isoDate).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

/** `strftime('%Y-%m-%d %H:%M:%S%z')`, SearXNG's `pubdate`. */
function pythonPubdate(isoDate: string): string {
  return new Date(isoDate).toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, '+0000');
}
