import { cutUnits } from '@lore/ai';
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { OutboundError, OutboundHttpClient, TargetGuard, TargetRefusedError, type HostLookup, type OutboundResponse, type ResolvedAddress, type ResolvedTarget } from '@lore/outbound';
import { z } from 'zod';

/**
 * Web search for list building (docs/agents.md, "Web search"): the `WebSearch` port and its default provider,
 * SearXNG's JSON API. A search returns result URLs, titles and snippets only; whoever reads a result page fetches
 * it through the guarded client with robots.txt, never through this module.
 */

export interface WebSearchResult {
  /** Absolute http(s) URL, at most 2,048 characters, fragment removed. */
  url: string;
  title: string;
  /** Plain text, at most `MAX_SNIPPET_CHARS`. */
  snippet: string;
  /** ISO 8601, when the engine gave a publication date. */
  publishedAt?: string;
}

export interface WebSearchOptions {
  /** 1-based page of results (default 1, at most `MAX_PAGE`). */
  page?: number;
  /** Results kept from the page, at most `MAX_LIMIT` (default: all the page holds). */
  limit?: number;
  /** A language code (`de`, `en-US`), or `all`; default the instance's. */
  language?: string;
  signal?: AbortSignal;
}

export interface WebSearchResponse {
  results: WebSearchResult[];
}

export interface WebSearch {
  /** The provider's name, for snapshots and logs (`searxng`). */
  readonly provider: string;
  search(query: string, options?: WebSearchOptions): Promise<WebSearchResponse>;
}

/**
 * Why a search gave no results. `rate_limited` (429), `unavailable` (502/503/504, a connection failure) and
 * `timeout` are `retryable`: the engine counts the attempt against its budget and tries again later, after
 * `retryAfterMs` when the provider said so. `misconfigured` (JSON output disabled — 403, a wrong address — 404,
 * an address the guard refuses) needs the operator; `invalid_query` is the caller's; `bad_response` is a provider
 * answering something that is not its API; `aborted` is the caller's signal.
 */
export type WebSearchErrorKind = 'rate_limited' | 'unavailable' | 'timeout' | 'misconfigured' | 'invalid_query' | 'bad_response' | 'aborted';

const RETRYABLE: ReadonlySet<WebSearchErrorKind> = new Set(['rate_limited', 'unavailable', 'timeout']);

export class WebSearchError extends Error {
  readonly retryable: boolean;

  constructor(
    readonly kind: WebSearchErrorKind,
    message: string,
    readonly status: number | null = null,
    /** How long the provider asked us to wait (Retry-After), bounded to `MAX_RETRY_AFTER_MS`; null when it did not say. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'WebSearchError';
    this.retryable = RETRYABLE.has(kind);
  }
}

export function isRetryableSearchError(err: unknown): err is WebSearchError {
  return err instanceof WebSearchError && err.retryable;
}

export const MAX_QUERY_CHARS = 500;
export const MAX_PAGE = 50;
export const MAX_LIMIT = 100;
export const MAX_SNIPPET_CHARS = 1_000;
const MAX_TITLE_CHARS = 300;
const MAX_URL_CHARS = 2_048;
export const MAX_RETRY_AFTER_MS = 10 * 60_000;
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
const LANGUAGE = /^(?:[a-z]{2,3}(?:-[A-Za-z]{2})?|all|auto)$/;

export interface SearxngWebSearchOptions {
  /** The instance's address (`LORE_AGENTS_SEARXNG_URL`), with or without a path prefix: `${baseUrl}/search` is called. */
  baseUrl: string;
  /** A client to use (its guard decides what is reachable); by default one of its own with a `ConfiguredOriginGuard`. */
  http?: OutboundHttpClient;
  /** Per search, the whole request (default 10 s). */
  timeoutMs?: number;
  userAgent?: string;
  /** Test hook: the guard's resolver. */
  lookup?: HostLookup;
}

/**
 * Addresses the instance may never be at, whatever the configuration says: link-local (where cloud metadata
 * services answer), the public metadata addresses, unspecified, multicast, broadcast and reserved ranges.
 * IPv4-mapped IPv6 addresses are checked as the IPv4 address they carry.
 */
const NEVER = new BlockList();
NEVER.addSubnet('169.254.0.0', 16, 'ipv4');
NEVER.addSubnet('0.0.0.0', 8, 'ipv4');
NEVER.addSubnet('224.0.0.0', 4, 'ipv4');
NEVER.addSubnet('240.0.0.0', 4, 'ipv4');
NEVER.addAddress('168.63.129.16', 'ipv4');
NEVER.addAddress('100.100.100.200', 'ipv4');
NEVER.addSubnet('fe80::', 10, 'ipv6');
NEVER.addSubnet('ff00::', 8, 'ipv6');
NEVER.addAddress('::', 'ipv6');
NEVER.addAddress('fd00:ec2::254', 'ipv6');

function neverReachable(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return NEVER.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

const defaultLookup: HostLookup = async (hostname) => (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

/**
 * The guard of the SearXNG client. The instance's address is operator configuration (like the database's), not a
 * URL a user or a page chose, so it may be on loopback, a private network or a cluster-internal name
 * (`http://searxng.search.svc:8080`). In exchange the client reaches that one origin only: any other URL, a redirect
 * to another origin included, is refused; and link-local, metadata, unspecified and multicast addresses are refused
 * even for it. DNS is resolved once per request and the connection pinned to the checked address (the client's
 * peer check uses `isAllowedAddress`).
 */
export class ConfiguredOriginGuard extends TargetGuard {
  private readonly origin: string;
  private readonly resolveHost: HostLookup;

  constructor(baseUrl: string, lookup?: HostLookup) {
    super({ allowLoopback: true });
    this.origin = new URL(baseUrl).origin;
    this.resolveHost = lookup ?? defaultLookup;
  }

  override isAllowedAddress(address: string): boolean {
    return !neverReachable(address);
  }

  override async resolve(raw: string | URL): Promise<ResolvedTarget> {
    let url: URL;
    try {
      url = new URL(typeof raw === 'string' ? raw : raw.href);
    } catch {
      throw new TargetRefusedError('invalid_url', 'not a valid absolute URL');
    }
    if (url.origin !== this.origin) throw new TargetRefusedError('forbidden_name', 'only the configured SearXNG address is reachable');
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    let answers: ResolvedAddress[];
    if (isIP(hostname)) answers = [{ address: hostname, family: isIP(hostname) === 6 ? 6 : 4 }];
    else {
      try {
        answers = await this.resolveHost(hostname);
      } catch (err) {
        throw new TargetRefusedError('unresolvable', `could not resolve ${hostname}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
      }
    }
    if (answers.length === 0 || answers.length > 32) throw new TargetRefusedError('unresolvable', `${hostname} has no usable addresses`);
    for (const a of answers) {
      if (neverReachable(a.address)) throw new TargetRefusedError('forbidden_address', `${hostname} is a link-local, metadata, unspecified or multicast address`);
    }
    const chosen = answers[0]!;
    return { url, hostname, port, address: chosen.address, family: chosen.family };
  }
}

const SearxngResult = z.object({
  url: z.string().optional().nullable(),
  title: z.string().optional().nullable(),
  content: z.string().optional().nullable(),
  publishedDate: z.string().optional().nullable(),
});
const SearxngAnswer = z.object({ results: z.array(z.unknown()) });

/** SearXNG's search API (`GET /search?q=…&format=json&pageno=N`) through the guarded outbound client. */
export class SearxngWebSearch implements WebSearch {
  readonly provider = 'searxng';
  private readonly endpoint: URL;
  private readonly http: OutboundHttpClient;
  private readonly ownsClient: boolean;
  private readonly timeoutMs: number;
  /** `Authorization: Basic …` from the address's user and password (an instance behind basic authentication). */
  private readonly authorization: string | null;

  constructor(options: SearxngWebSearchOptions) {
    let base: URL;
    try {
      base = new URL(options.baseUrl);
    } catch {
      throw new WebSearchError('misconfigured', 'the SearXNG address is not a valid URL');
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new WebSearchError('misconfigured', 'the SearXNG address must be an http(s) URL');
    base.search = '';
    base.hash = '';
    // The address's user and password go in a header to that origin only (the guard allows no other), never in the
    // request's URL, which logs and traces would show.
    this.authorization = base.username || base.password ? `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}` : null;
    base.username = '';
    base.password = '';
    if (!base.pathname.endsWith('/')) base.pathname = `${base.pathname}/`;
    this.endpoint = new URL('search', base);
    this.ownsClient = options.http === undefined;
    this.http = options.http ?? new OutboundHttpClient({ guard: new ConfiguredOriginGuard(base.href, options.lookup), userAgent: options.userAgent ?? 'LoreAgents/1', maxSocketsPerOrigin: 8 });
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  async search(query: string, options: WebSearchOptions = {}): Promise<WebSearchResponse> {
    const q = query.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
    if (q === '') throw new WebSearchError('invalid_query', 'the query is empty');
    if (q.length > MAX_QUERY_CHARS) throw new WebSearchError('invalid_query', `the query is longer than ${MAX_QUERY_CHARS} characters`);
    const page = options.page ?? 1;
    if (!Number.isInteger(page) || page < 1 || page > MAX_PAGE) throw new WebSearchError('invalid_query', `page must be an integer from 1 to ${MAX_PAGE}`);
    const limit = options.limit ?? MAX_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new WebSearchError('invalid_query', `limit must be an integer from 1 to ${MAX_LIMIT}`);
    if (options.language !== undefined && !LANGUAGE.test(options.language)) throw new WebSearchError('invalid_query', 'language must be a language code such as de or en-US, or all');

    const url = new URL(this.endpoint);
    url.searchParams.set('q', q);
    url.searchParams.set('format', 'json');
    url.searchParams.set('pageno', String(page));
    if (options.language !== undefined) url.searchParams.set('language', options.language);

    let res: OutboundResponse;
    try {
      res = await this.http.fetch({
        url,
        headers: { accept: 'application/json', ...(this.authorization ? { authorization: this.authorization } : {}) },
        timeoutMs: this.timeoutMs,
        maxResponseBytes: MAX_RESPONSE_BYTES,
        maxRedirects: 2,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (err) {
      throw fromOutbound(err);
    }
    if (res.status !== 200) throw fromStatus(res);
    let body: unknown;
    try {
      body = JSON.parse(res.text());
    } catch {
      throw new WebSearchError('bad_response', `SearXNG answered ${res.contentType ?? 'no content type'} that is not JSON`, res.status);
    }
    const parsed = SearxngAnswer.safeParse(body);
    if (!parsed.success) throw new WebSearchError('bad_response', 'SearXNG answered JSON without a results list', res.status);
    return { results: toResults(parsed.data.results, limit) };
  }

  /** Closes the client this instance built (a client given to it is its owner's to close). */
  close(): void {
    if (this.ownsClient) this.http.close();
  }
}

function fromOutbound(err: unknown): WebSearchError {
  if (!(err instanceof OutboundError)) return new WebSearchError('unavailable', `SearXNG could not be reached: ${(err as Error).message}`);
  switch (err.kind) {
    case 'timeout':
      return new WebSearchError('timeout', `SearXNG did not answer in time (${err.message})`);
    case 'aborted':
      return new WebSearchError('aborted', 'the search was cancelled');
    case 'refused':
      return new WebSearchError('misconfigured', `the request was refused by the outbound guard (${err.message})`);
    case 'too_large':
      return new WebSearchError('bad_response', 'SearXNG answered more than the response limit');
    case 'too_many_redirects':
      return new WebSearchError('misconfigured', 'the SearXNG address redirects too often');
    case 'network_error':
      return new WebSearchError('unavailable', `SearXNG could not be reached (${err.message})`);
    default:
      return new WebSearchError('bad_response', `SearXNG request failed (${err.kind})`);
  }
}

function fromStatus(res: OutboundResponse): WebSearchError {
  const status = res.status;
  if (status === 429) return new WebSearchError('rate_limited', 'SearXNG is rate limiting these searches (429)', status, retryAfter(res));
  if (status === 502 || status === 503 || status === 504) return new WebSearchError('unavailable', `SearXNG is unavailable (${status})`, status, retryAfter(res));
  if (status === 403) {
    return new WebSearchError('misconfigured', 'SearXNG refuses JSON output (403): enable the json format in the instance settings (search.formats: [html, json])', status);
  }
  if (status === 404) return new WebSearchError('misconfigured', 'SearXNG has no /search at the configured address (404): check LORE_AGENTS_SEARXNG_URL', status);
  if (status === 400) {
    const detail = errorDetail(res);
    return new WebSearchError('invalid_query', `SearXNG refused the query (400${detail ? `: ${detail}` : ''})`, status);
  }
  if (status >= 500) return new WebSearchError('unavailable', `SearXNG failed (${status})`, status, retryAfter(res));
  return new WebSearchError('bad_response', `SearXNG answered ${status}`, status);
}

function errorDetail(res: OutboundResponse): string {
  try {
    const body = JSON.parse(res.text()) as { error?: unknown };
    return typeof body.error === 'string' ? cutUnits(body.error.replace(/[\u0000-\u001f\u007f]+/g, ' '), 200) : '';
  } catch {
    return '';
  }
}

/** Retry-After as milliseconds (delta seconds or an HTTP date), bounded; null when absent or unreadable. */
export function retryAfter(res: Pick<OutboundResponse, 'headers'>, now: number = Date.now()): number | null {
  const raw = res.headers['retry-after'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value) return null;
  const trimmed = value.trim();
  let ms: number;
  if (/^\d+$/.test(trimmed)) ms = Number(trimmed) * 1000;
  else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return null;
    ms = at - now;
  }
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}

/** SearXNG's results as ours: http(s) URLs only, fragments dropped, duplicates dropped, text bounded and plain. */
export function toResults(raw: readonly unknown[], limit: number): WebSearchResult[] {
  const out: WebSearchResult[] = [];
  const seen = new Set<string>();
  for (const item of raw) {
    if (out.length >= limit) break;
    const r = SearxngResult.safeParse(item);
    if (!r.success || !r.data.url) continue;
    let url: URL;
    try {
      url = new URL(r.data.url);
    } catch {
      continue;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') continue;
    if (url.username || url.password) continue;
    url.hash = '';
    const href = url.href;
    if (href.length > MAX_URL_CHARS || seen.has(href)) continue;
    seen.add(href);
    const published = r.data.publishedDate ? Date.parse(r.data.publishedDate) : NaN;
    out.push({
      url: href,
      title: plain(r.data.title ?? '', MAX_TITLE_CHARS) || cutUnits(href, MAX_TITLE_CHARS),
      snippet: plain(r.data.content ?? '', MAX_SNIPPET_CHARS),
      ...(Number.isNaN(published) ? {} : { publishedAt: new Date(published).toISOString() }),
    });
  }
  return out;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'" };

/** Text an engine gave: tags removed, common entities decoded, control characters and runs of space folded, bounded. */
function plain(text: string, max: number): string {
  return text
    .replace(/<[^>]{0,200}>/g, ' ')
    .replace(/&(amp|lt|gt|quot|apos|nbsp|#39);/g, (_, e: string) => ENTITIES[e] ?? ' ')
    .replace(/[\u0000-\u001f\u007f\s]+/g, ' ')
    .trim()
    .slice(0, max)
    .replace(/[\ud800-\udbff]$/, '')
    .trim();
}

/** The configured provider, or null when no web search is configured (lists then come from the directory and the tenant's knowledge). */
export function webSearchFrom(settings: { searxngUrl?: string | undefined; timeoutMs?: number; lookup?: HostLookup }): SearxngWebSearch | null {
  if (!settings.searxngUrl) return null;
  return new SearxngWebSearch({ baseUrl: settings.searxngUrl, ...(settings.timeoutMs ? { timeoutMs: settings.timeoutMs } : {}), ...(settings.lookup ? { lookup: settings.lookup } : {}) });
}
