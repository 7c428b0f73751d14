import { OutboundError, OutboundHttpClient, RobotsPolicy, TargetGuard, TargetRefusedError, unrequestedEncoding, type HostLookup } from '@lore/outbound';

/**
 * Reading one web page a user or the web named (company overview; reusable by anything that reads company sites):
 * through the SSRF-guarded OutboundHttpClient with robots.txt honoured for `LoreBot`, bounded in time and size.
 * Loopback addresses are reachable only when `allowLoopback` says so (`LORE_AGENTS_ALLOW_LOOPBACK`, refused in
 * production; tests); private, link-local and metadata addresses never are.
 */

/** The product token robots.txt rules are matched against, as the crawler and the web connector send it. */
export const AGENTS_USER_AGENT = 'LoreBot/1 (+https://lore.dev/bot)';

export interface WebTargets {
  /** Open web reads to loopback addresses and `*.localhost` (local testing only). */
  allowLoopback: boolean;
  /** A resolver instead of the system's (tests: the loopback world's). */
  lookup?: HostLookup;
}

export interface PageReadLimits {
  /** The whole fetch, robots.txt included. Default 10 s. */
  timeoutMs: number;
  /** HTML read at most; the rest is cut off (a page's facts are near its top). Default 2 MiB. */
  maxBytes: number;
}

export const PAGE_READ_DEFAULTS: PageReadLimits = { timeoutMs: 10_000, maxBytes: 2 * 1024 * 1024 };

/**
 * Why a page could not be read. `refused`: the URL itself names an address Lore does not contact (or is not an
 * http(s) URL); everything else is the site's doing: `unreachable` (no such host, no connection, timeout, a redirect
 * to a forbidden address or too many), `disallowed` (robots.txt), `http_error` (a 4xx/5xx answer), `not_html`.
 */
export type PageReadFailure = 'refused' | 'unreachable' | 'disallowed' | 'http_error' | 'not_html';

export class PageReadError extends Error {
  constructor(
    readonly kind: PageReadFailure,
    message: string,
    /**
     * A failure that may not happen again a moment later: no connection, a connection that broke, no answer in
     * time, a 5xx or 429 answer. A name that does not resolve, robots.txt, a refused address and a 4xx answer are not.
     */
    readonly transient = false,
    /** No request went out: the guard refused the address (or the name's) before any connection. */
    readonly unsent = false,
  ) {
    super(message);
    this.name = 'PageReadError';
  }
}

export interface FetchedPage {
  /** The URL that answered (after redirects). */
  url: string;
  html: string;
  truncated: boolean;
}

export interface PageReader {
  read(url: string, signal?: AbortSignal): Promise<FetchedPage>;
  close(): void;
}

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);

/**
 * `proxyUrl`: read every page (and robots.txt) through this egress proxy (docs/agents.md, "Egress proxies"); the
 * guard still checks every target before the proxy is asked.
 */
export function createPageReader(targets: WebTargets, limits: Partial<PageReadLimits> = {}, options: { proxyUrl?: string } = {}): PageReader {
  const { timeoutMs, maxBytes } = { ...PAGE_READ_DEFAULTS, ...limits };
  const guard = new TargetGuard({ allowLoopback: targets.allowLoopback, ...(targets.lookup ? { lookup: targets.lookup } : {}) });
  const client = new OutboundHttpClient({ guard, userAgent: AGENTS_USER_AGENT, timeoutMs, maxSocketsPerOrigin: 4, ...(options.proxyUrl ? { proxy: { url: options.proxyUrl } } : {}) });
  const robots = new RobotsPolicy({ client, maxOrigins: 1000, timeoutMs: Math.min(timeoutMs, 5_000) });
  return {
    async read(url, signal) {
      // The URL as given is checked first, so a forbidden address or name is the caller's mistake (refused), told
      // apart from a host name whose resolution is refused (unreachable: one answer whether the name does not exist
      // or points inside, so no caller learns which internal names exist); a redirect hop refused later is the
      // site's doing too.
      try {
        await guard.resolve(url, signal);
      } catch (err) {
        // The caller's deadline passed while the name resolved: the site is slow to find, as slow to answer below.
        if (signal?.aborted && err === signal.reason && (err as { name?: unknown } | null)?.name === 'TimeoutError') {
          throw new PageReadError('unreachable', `${new URL(url).host} could not be read in time`, true);
        }
        if (!(err instanceof TargetRefusedError)) throw err;
        if (err.byName) throw new PageReadError('unreachable', `${new URL(url).hostname} could not be reached: ${err.message}`, false, true);
        throw new PageReadError('refused', `Lore does not read this address: ${err.message}`, false, true);
      }
      let res;
      try {
        res = await client.fetch({ url, robots, maxResponseBytes: maxBytes, oversize: 'truncate', timeoutMs, signal, headers: { accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.1' } });
      } catch (err) {
        if (!(err instanceof OutboundError)) throw err;
        if (err.kind === 'disallowed') {
          // An unreachable robots.txt (no connection, a 5xx answer) disallows the whole site (RFC 9309): say which.
          const rules = await robots.rulesFor(url).catch(() => null);
          if (rules?.source === 'unreachable') throw new PageReadError('unreachable', `${new URL(url).host} could not be read: its robots.txt could not be fetched (the site is down or answered an error), so the whole site counts as disallowed`);
          throw new PageReadError('disallowed', `the site's robots.txt does not allow Lore to read ${url}`);
        }
        if (err.kind === 'aborted') {
          // A caller's deadline (a TimeoutError reason) is the site's slowness; a caller that went away is not.
          if ((signal?.reason as { name?: unknown } | undefined)?.name === 'TimeoutError') throw new PageReadError('unreachable', `${new URL(url).host} could not be read in time`, true);
          throw err;
        }
        const why = err.kind === 'refused' ? `it redirects to an address Lore does not contact (${err.message})` : err.kind === 'timeout' ? `no answer within ${timeoutMs} ms` : err.message;
        throw new PageReadError('unreachable', `${new URL(url).host} could not be read: ${why}`, err.kind === 'timeout' || err.kind === 'network_error');
      }
      if (res.status >= 400) throw new PageReadError('http_error', `${res.url} answered ${res.status}`, res.status >= 500 || res.status === 429);
      if (res.status < 200 || res.status >= 300) throw new PageReadError('unreachable', `${res.url} answered ${res.status} without a page`);
      if (res.contentType !== null && !HTML_TYPES.has(res.contentType)) throw new PageReadError('not_html', `${res.url} is not an HTML page (${res.contentType})`);
      // A compressed body Lore did not ask for is bytes, not a page (before 2026-11-30 it was read as garbage text).
      const encoding = unrequestedEncoding(res);
      if (encoding !== null) throw new PageReadError('not_html', `${res.url} answered a body encoded ${encoding}, which was not asked for`);
      return { url: res.url, html: res.text(), truncated: res.truncated };
    },
    close: () => client.close(),
  };
}
