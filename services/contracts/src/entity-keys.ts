/**
 * How every service writes an entity's identity (docs/memory.md, "Knowledge graphs"; docs/agents.md, "Directory and
 * database search"): one company per domain, one person per profile URL. The agents' directory and the graph's
 * entity resolution read the same keys, so a company found by a search and the same company in a graph agree.
 */

/** `https://www.Example.com/about` → `example.com`; '' when nothing host-like is left. */
export function normalizeDomain(value: string): string {
  let v = value.trim().toLowerCase();
  v = v.replace(/^[a-z][a-z0-9+.-]*:\/\//, '').replace(/^\/\//, '');
  v = v.split(/[/?#\s]/)[0] ?? '';
  v = v.replace(/^[^@]*@/, '').replace(/:\d+$/, '').replace(/^www\./, '').replace(/\.$/, '');
  return /^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(v) ? v : '';
}

/** A profile URL without its scheme, `www.`, query, fragment and trailing slash, lower-cased. */
export function normalizeProfileUrl(value: string): string {
  const v = value.trim().toLowerCase().replace(/^[a-z][a-z0-9+.-]*:\/\//, '').replace(/^www\./, '').split(/[?#]/)[0] ?? '';
  return v.replace(/\/+$/, '');
}
