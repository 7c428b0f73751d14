import { isProxyCountryCode } from './session-options';

/**
 * The egress proxies an operator configures per country (LORE_AGENTS_EGRESS_PROXIES; docs/agents.md, "Egress
 * proxies"): a session started with `proxy: true` and a `proxy_country_code` reads pages through that country's
 * proxy. Pure: parsing and checking only.
 */

/** Country code (spec 3's set) → proxy URL (`http(s)://[user:password@]host:port`). */
export type EgressProxies = Readonly<Record<string, string>>;

/** A proxy URL without its credentials, for messages and logs. */
export function redactProxyUrl(raw: string): string {
  try {
    const u = new URL(raw);
    if (u.username || u.password) {
      u.username = '';
      u.password = '';
      return `${u.protocol}//***@${u.host}`;
    }
    return `${u.protocol}//${u.host}`;
  } catch {
    return '(not a URL)';
  }
}

/** Why a proxy URL is not one, or null. Never quotes the URL (it may carry a password). */
export function proxyUrlProblem(raw: string): string | null {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'is not a URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must be an http:// or https:// proxy, not ${u.protocol}`;
  if (!u.hostname) return 'has no host';
  if ((u.pathname !== '/' && u.pathname !== '') || u.search || u.hash) return 'must not have a path, query or fragment';
  return null;
}

/**
 * Parses `de=http://proxy-de:3128,fr=http://user:pw@proxy-fr:3128` or the JSON object `{"de": "http://…"}`
 * (whitespace around entries ignored; empty: none). Every problem is reported, by country code, never with the URL.
 */
export function parseEgressProxies(raw: string | undefined): { proxies: EgressProxies; problems: string[] } {
  const proxies: Record<string, string> = {};
  const problems: string[] = [];
  const text = (raw ?? '').trim();
  if (text === '') return { proxies, problems };
  let entries: Array<[string, unknown]>;
  if (text.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { proxies, problems: ['is not valid JSON (give a JSON object of country code to proxy URL, or cc=url pairs separated by commas)'] };
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return { proxies, problems: ['must be a JSON object of country code to proxy URL'] };
    entries = Object.entries(parsed as Record<string, unknown>);
  } else {
    entries = [];
    for (const part of text.split(',')) {
      const item = part.trim();
      if (item === '') continue;
      const eq = item.indexOf('=');
      if (eq <= 0) {
        problems.push(`entry ${entries.length + 1} is not cc=url`);
        continue;
      }
      entries.push([item.slice(0, eq).trim(), item.slice(eq + 1).trim()]);
    }
  }
  for (const [code, url] of entries) {
    const shown = code.slice(0, 8);
    if (!isProxyCountryCode(code)) {
      problems.push(`"${shown}" is not a country code of spec 3's set (lowercase, two letters)`);
      continue;
    }
    if (typeof url !== 'string') {
      problems.push(`${code}: the proxy must be a URL string`);
      continue;
    }
    const problem = proxyUrlProblem(url);
    if (problem) problems.push(`${code}: the proxy ${problem}`);
    else if (proxies[code] !== undefined) problems.push(`${code} is given twice`);
    else proxies[code] = url;
  }
  return { proxies, problems };
}

/** The 422 message of a start that asks for a country with no configured proxy. */
export function unconfiguredCountryMessage(code: string, configured: readonly string[]): string {
  return configured.length === 0
    ? `no egress proxies are configured on this Lore, so proxy_country_code "${code}" cannot be used: start without proxy`
    : `no egress proxy is configured for "${code}" (configured: ${configured.join(', ')})`;
}
