import ipaddr from 'ipaddr.js';

export type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parses one CIDR range (a bare address means a single host); null when it is not a valid range. */
export function parseCidr(text: string): Cidr | null {
  const value = text.trim();
  try {
    if (value.includes('/')) {
      const [addr, bits] = ipaddr.parseCIDR(value);
      return [normalise(addr), addr.kind() === 'ipv6' && normalise(addr).kind() === 'ipv4' ? Math.max(0, bits - 96) : bits];
    }
    const addr = normalise(ipaddr.parse(value));
    return [addr, addr.kind() === 'ipv4' ? 32 : 128];
  } catch {
    return null;
  }
}

/** Invalid entries, so callers can reject a whole list with every problem named. */
export function invalidCidrs(list: readonly string[]): string[] {
  return list.filter((c) => parseCidr(c) === null);
}

export function parseCidrList(list: readonly string[]): Cidr[] {
  const out: Cidr[] = [];
  for (const c of list) {
    const parsed = parseCidr(c);
    if (!parsed) throw new Error(`invalid CIDR range: ${c}`);
    out.push(parsed);
  }
  return out;
}

/** IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`, common on dual-stack sockets) compare as IPv4. */
function normalise(addr: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) return (addr as ipaddr.IPv6).toIPv4Address();
  return addr;
}

export function parseAddress(text: string | undefined): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (!text) return null;
  let value = text.trim();
  // `[::1]:443` and `1.2.3.4:80` forms occasionally appear in X-Forwarded-For.
  if (value.startsWith('[')) value = value.slice(1, value.indexOf(']'));
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(value)) value = value.slice(0, value.lastIndexOf(':'));
  try {
    return normalise(ipaddr.parse(value));
  } catch {
    return null;
  }
}

export function inRanges(addr: ipaddr.IPv4 | ipaddr.IPv6, ranges: readonly Cidr[]): boolean {
  for (const [net, bits] of ranges) {
    if (net.kind() !== addr.kind()) continue;
    if ((addr as ipaddr.IPv4).match(net as ipaddr.IPv4, bits)) return true;
  }
  return false;
}

/**
 * The caller's address. X-Forwarded-For is believed only hop by hop from the right, and only while the hop that
 * appended it is a configured proxy; the first address not in a proxy range is the client. A client that
 * writes its own X-Forwarded-For therefore cannot choose the address the allowlist sees.
 */
export function clientAddress(remoteAddress: string | undefined, forwardedFor: string | string[] | undefined, trustedProxies: readonly Cidr[]): string | null {
  const remote = parseAddress(remoteAddress);
  if (!remote) return null;
  if (trustedProxies.length === 0 || !inRanges(remote, trustedProxies) || !forwardedFor) return remote.toString();
  const header = Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor;
  const hops = header.split(',').slice(-32);
  let client = remote;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseAddress(hops[i]);
    if (!hop) break;
    client = hop;
    if (!inRanges(hop, trustedProxies)) break;
  }
  return client.toString();
}

/**
 * The scheme the client used: what a trusted proxy in front says (`X-Forwarded-Proto`'s first value, `http` or
 * `https` only), else whether the gateway's own connection is TLS. Upstreams build public URLs from it (agents'
 * `websocket_url` is `wss://` behind TLS).
 */
export function clientProto(remoteAddress: string | undefined, forwardedProto: string | string[] | undefined, encrypted: boolean, trustedProxies: readonly Cidr[]): 'http' | 'https' {
  const own = encrypted ? 'https' : 'http';
  const remote = parseAddress(remoteAddress);
  if (!remote || trustedProxies.length === 0 || !inRanges(remote, trustedProxies) || !forwardedProto) return own;
  const first = (Array.isArray(forwardedProto) ? forwardedProto.join(',') : forwardedProto).split(',')[0]!.trim().toLowerCase();
  return first === 'https' || first === 'http' ? first : own;
}

export function addressAllowed(address: string | null, allowlist: readonly Cidr[]): boolean {
  if (allowlist.length === 0) return true;
  const addr = parseAddress(address ?? undefined);
  return addr !== null && inRanges(addr, allowlist);
}
