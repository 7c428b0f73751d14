import type { EgressProxies } from '../domain/egress';
import { createPageReader, type PageReader, type PageReadLimits, type WebTargets } from './web-pages';

/**
 * Page readers through the operator's egress proxies, one per country (docs/agents.md, "Egress proxies"). A reader
 * is built the first time a session asks for its country and kept for the process (its keep-alive pool and its
 * robots.txt cache are the country's own: a site may answer another country differently). The same SSRF guard as
 * the direct reader decides every target before the proxy is asked.
 */
export class EgressReaders {
  private readonly readers = new Map<string, PageReader>();

  constructor(
    private readonly proxies: EgressProxies,
    private readonly targets: WebTargets,
    private readonly limits: Partial<PageReadLimits> = {},
  ) {}

  /** The configured country codes, sorted. */
  countries(): string[] {
    return Object.keys(this.proxies).sort();
  }

  has(code: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.proxies, code);
  }

  /** The reader through `code`'s proxy; an unconfigured code throws (start refuses it before a session runs). */
  reader(code: string): PageReader {
    const known = this.readers.get(code);
    if (known) return known;
    if (!this.has(code)) throw new Error(`no egress proxy is configured for "${code.slice(0, 8)}"`);
    const reader = createPageReader(this.targets, this.limits, { proxyUrl: this.proxies[code]! });
    this.readers.set(code, reader);
    return reader;
  }

  close(): void {
    for (const r of this.readers.values()) r.close();
    this.readers.clear();
  }
}
