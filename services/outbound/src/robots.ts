import robotsParser from 'robots-parser';
import { OutboundError, type OutboundHttpClient } from './http-client';

/**
 * robots.txt for page fetchers (crawler, web research, company overview), as RFC 9309 says: one file per origin
 * (scheme, host and port), fetched through the same guarded client as the pages, cached, and read with
 * robots-parser.
 *
 * - 2xx: the rules of the file (at most `maxBytes` of it are parsed; the RFC asks parsers to read at least 500 KiB).
 * - 4xx (404, 401, 403, 410 …): no rules, everything allowed. 429 is an exception: "slow down" is not "no file",
 *   so it counts as unreachable.
 * - 5xx, 429, network errors, timeouts, too many redirects, a refused address: complete disallow, remembered for
 *   `unreachableTtlMs` before the file is asked for again. A connection that failed or broke, or no answer in time,
 *   is asked once more first: one lost packet should not close a site for the whole period.
 */
export type RobotsSource = 'file' | 'missing' | 'unreachable';

export interface RobotsRules {
  origin: string;
  source: RobotsSource;
  /** When these rules were obtained (epoch ms). */
  fetchedAt: number;
  isAllowed(url: string, userAgent: string): boolean;
  /** The crawl-delay the file asks of `userAgent` in milliseconds, or null. */
  crawlDelayMs(userAgent: string): number | null;
  /** The file's `Sitemap:` lines as written (absolute URLs, any origin), in order; none without a file. */
  sitemaps: string[];
}

export interface RobotsPolicyOptions {
  client: OutboundHttpClient;
  /** How long a fetched (or missing) file is trusted; the RFC says no longer than 24 hours. */
  ttlMs?: number;
  /** How long an unreachable origin stays fully disallowed before robots.txt is asked for again. */
  unreachableTtlMs?: number;
  maxBytes?: number;
  timeoutMs?: number;
  /** Origins kept in the cache; the least recently used one leaves first. */
  maxOrigins?: number;
  /** Longest crawl-delay honoured; a file asking for more gets this (a crawl must still end). */
  maxCrawlDelayMs?: number;
  now?: () => number;
}

export const ROBOTS_DEFAULTS = {
  ttlMs: 24 * 3600_000,
  unreachableTtlMs: 10 * 60_000,
  maxBytes: 500 * 1024,
  timeoutMs: 10_000,
  maxOrigins: 10_000,
  maxCrawlDelayMs: 60_000,
} as const;

interface Entry {
  rules: RobotsRules;
  expiresAt: number;
}

type Parsed = ReturnType<typeof robotsParser>;

/** `Sitemap:` lines kept per file: enough for any real site, bounded for a hostile one. */
const MAX_SITEMAP_LINES = 100;

/** A per-origin cache of robots.txt rules; one per fetcher process. Concurrent asks for one origin share a fetch. */
export class RobotsPolicy {
  private readonly client: OutboundHttpClient;
  private readonly ttlMs: number;
  private readonly unreachableTtlMs: number;
  private readonly maxBytes: number;
  private readonly timeoutMs: number;
  private readonly maxOrigins: number;
  private readonly maxCrawlDelayMs: number;
  private readonly now: () => number;
  private readonly cache = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<RobotsRules>>();

  constructor(options: RobotsPolicyOptions) {
    this.client = options.client;
    this.ttlMs = options.ttlMs ?? ROBOTS_DEFAULTS.ttlMs;
    this.unreachableTtlMs = options.unreachableTtlMs ?? ROBOTS_DEFAULTS.unreachableTtlMs;
    this.maxBytes = options.maxBytes ?? ROBOTS_DEFAULTS.maxBytes;
    this.timeoutMs = options.timeoutMs ?? ROBOTS_DEFAULTS.timeoutMs;
    this.maxOrigins = Math.max(1, options.maxOrigins ?? ROBOTS_DEFAULTS.maxOrigins);
    this.maxCrawlDelayMs = options.maxCrawlDelayMs ?? ROBOTS_DEFAULTS.maxCrawlDelayMs;
    this.now = options.now ?? Date.now;
  }

  /** True when robots.txt of `url`'s origin lets `userAgent` fetch it. A URL that does not parse is not allowed. */
  async isAllowed(url: string, userAgent: string): Promise<boolean> {
    const rules = await this.rulesFor(url);
    return rules !== null && rules.isAllowed(url, userAgent);
  }

  /** The crawl-delay (ms) `url`'s origin asks of `userAgent`, or null when it asks none. */
  async crawlDelayMs(url: string, userAgent: string): Promise<number | null> {
    const rules = await this.rulesFor(url);
    return rules === null ? null : rules.crawlDelayMs(userAgent);
  }

  /** The rules of `url`'s origin, fetched when not cached or expired; null for a URL that is not http(s). */
  async rulesFor(url: string): Promise<RobotsRules | null> {
    let origin: string;
    try {
      const parsed = new URL(url);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
      origin = parsed.origin;
    } catch {
      return null;
    }
    const cached = this.cache.get(origin);
    if (cached && cached.expiresAt > this.now()) {
      // Map order is the eviction order: a hit moves the origin to the young end.
      this.cache.delete(origin);
      this.cache.set(origin, cached);
      return cached.rules;
    }
    const pending = this.inFlight.get(origin);
    if (pending) return pending;
    const fetching = this.fetchRules(origin).finally(() => this.inFlight.delete(origin));
    this.inFlight.set(origin, fetching);
    return fetching;
  }

  /** Forgets every cached origin (tests, or an operator asking for a fresh read). */
  clear(): void {
    this.cache.clear();
  }

  private async fetchRules(origin: string): Promise<RobotsRules> {
    const robotsUrl = `${origin}/robots.txt`;
    let rules: RobotsRules;
    let ttl = this.ttlMs;
    const request = { url: robotsUrl, method: 'GET', headers: { accept: 'text/plain, */*;q=0.1' }, redirect: 'follow', maxRedirects: 5, maxResponseBytes: this.maxBytes, oversize: 'truncate', timeoutMs: this.timeoutMs } as const;
    try {
      const res = await this.client.fetch(request).catch((err: unknown) => {
        if (err instanceof OutboundError && (err.kind === 'network_error' || err.kind === 'timeout')) return this.client.fetch(request);
        throw err;
      });
      if (res.status >= 200 && res.status < 300) {
        rules = this.fromFile(origin, robotsParser(robotsUrl, res.text()));
      } else if (res.status >= 400 && res.status < 500 && res.status !== 429) {
        rules = this.fixed(origin, 'missing', true);
      } else {
        rules = this.fixed(origin, 'unreachable', false);
        ttl = this.unreachableTtlMs;
      }
    } catch (err) {
      if (!(err instanceof OutboundError)) throw err;
      rules = this.fixed(origin, 'unreachable', false);
      ttl = this.unreachableTtlMs;
    }
    this.remember(origin, { rules, expiresAt: this.now() + ttl });
    return rules;
  }

  private fromFile(origin: string, parsed: Parsed): RobotsRules {
    return {
      origin,
      source: 'file',
      fetchedAt: this.now(),
      // robots-parser answers undefined for a URL of another origin: those are not this file's to allow.
      isAllowed: (url, userAgent) => sameOrigin(url, origin) && parsed.isAllowed(url, userAgent) !== false,
      crawlDelayMs: (userAgent) => {
        const seconds = parsed.getCrawlDelay(userAgent);
        if (seconds === undefined || !Number.isFinite(seconds) || seconds <= 0) return null;
        return Math.min(Math.round(seconds * 1000), this.maxCrawlDelayMs);
      },
      sitemaps: parsed.getSitemaps().slice(0, MAX_SITEMAP_LINES),
    };
  }

  private fixed(origin: string, source: RobotsSource, allowed: boolean): RobotsRules {
    return { origin, source, fetchedAt: this.now(), isAllowed: (url) => allowed && sameOrigin(url, origin), crawlDelayMs: () => null, sitemaps: [] };
  }

  private remember(origin: string, entry: Entry): void {
    this.cache.delete(origin);
    this.cache.set(origin, entry);
    while (this.cache.size > this.maxOrigins) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
  }
}

function sameOrigin(url: string, origin: string): boolean {
  try {
    return new URL(url).origin === origin;
  } catch {
    return false;
  }
}
