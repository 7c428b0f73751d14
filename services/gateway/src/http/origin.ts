import type { IncomingHttpHeaders } from 'node:http';

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/**
 * True when a browser sent this request from another origin than the gateway's own: `Sec-Fetch-Site: cross-site`, or
 * an `Origin` (browsers send it with every cross-origin request other than a plain GET) whose host is not the
 * request's `Host` (`null`, from a sandboxed page or a file, included). Clients other than browsers send neither.
 */
export function fromAnotherOrigin(headers: IncomingHttpHeaders): boolean {
  if (first(headers['sec-fetch-site'])?.toLowerCase() === 'cross-site') return true;
  const origin = first(headers.origin);
  if (origin === undefined) return false;
  const host = first(headers.host)?.toLowerCase();
  try {
    return origin === 'null' || !host || new URL(origin).host !== host;
  } catch {
    return true;
  }
}
