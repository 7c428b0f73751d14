import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Outbound safety (server-side request forgery) for every URL a user chooses: webhook receivers, connector
 * endpoints, pages to crawl. Lore must never be turned into a client of its own network: loopback, private,
 * link-local, CGNAT, multicast, unspecified, reserved and cloud metadata addresses are refused, for IPv4 and IPv6
 * alike, including IPv4 hidden inside IPv6 (mapped, compatible, NAT64, 6to4, Teredo).
 *
 * The check runs on the addresses the name resolves to, before any connection, and the connection is then pinned to
 * the checked address, so a second DNS answer cannot swap in another address (DNS rebinding).
 */

export type RefusalReason =
  | 'invalid_url'
  | 'scheme_not_allowed'
  | 'credentials_in_url'
  | 'forbidden_name'
  | 'forbidden_address'
  | 'unresolvable';

export class TargetRefusedError extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
    /**
     * The refusal came from resolving a host name (`unresolvable`, or `forbidden_address` from a DNS answer). Such
     * refusals share one message, so a caller cannot tell a name that does not exist from one that points inside.
     */
    readonly byName = false,
  ) {
    super(message);
    this.name = 'TargetRefusedError';
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has. Injected in tests to simulate hostile DNS answers. */
export type HostLookup = (hostname: string) => Promise<ResolvedAddress[]>;

export type Protocol = 'http:' | 'https:';

/** What a caller accepts beyond the fixed refusals. Nothing here can open private ranges or metadata addresses. */
export interface TargetPolicy {
  /** Schemes accepted; default both. Webhook receivers are https only. */
  protocols?: readonly Protocol[];
  /**
   * Accept loopback targets (127.0.0.0/8, ::1, `localhost`) so a developer can receive on their own machine, and
   * accept plain http for them even when `protocols` says https only (a receiver on loopback has no certificate and
   * its traffic never leaves the host). Configurations refuse the setting behind this when NODE_ENV is production.
   */
  allowLoopback?: boolean;
}

export interface TargetGuardOptions extends TargetPolicy {
  lookup?: HostLookup;
  /** Most addresses one name may resolve to before the answer is treated as hostile. */
  maxAddresses?: number;
  /**
   * How long one name's resolution may take before the name counts as one that does not resolve (default 10 s). The
   * system resolver has no deadline of its own: a name whose servers never answer held its caller for as long as the
   * resolver's retries took (before 2026-11-30).
   */
  lookupTimeoutMs?: number;
}

export interface ResolvedTarget {
  url: URL;
  /** Host name without IPv6 brackets; used for SNI, certificate checks and the Host header. */
  hostname: string;
  port: number;
  /** The checked address the connection must use. */
  address: string;
  family: 4 | 6;
}

const URL_MAX_LENGTH = 2048;
const ALL_PROTOCOLS: readonly Protocol[] = ['http:', 'https:'];
const DEFAULT_PORTS: Record<Protocol, number> = { 'http:': 80, 'https:': 443 };

/** Addresses that are public by range but serve instance metadata in some clouds. */
const METADATA_ADDRESSES = new Set(['168.63.129.16']);

/** Names that never leave the machine or its cloud (RFC 6761, metadata services). */
const FORBIDDEN_NAMES = new Set(['localhost', 'metadata', 'metadata.google.internal', 'instance-data', 'kubernetes.default']);
const FORBIDDEN_SUFFIXES = ['.localhost', '.local', '.internal', '.svc', '.cluster.local', '.home.arpa'];

/** IPv6 prefixes whose low 32 bits are an IPv4 address that a relay or the host stack would connect to. */
const IPV4_EMBEDDING_RANGES = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052', '6to4', 'teredo']);

const defaultLookup: HostLookup = async (hostname) => {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/**
 * Why `address` may not be contacted, or null when it may. `address` must be a literal IP in canonical form (what a
 * resolver returns, or the WHATWG URL parser's output, which has already folded decimal, octal and hex forms).
 */
export function addressRefusal(address: string, allowLoopback = false): string | null {
  const kind = isIP(address);
  if (kind === 0) return 'not an IP address';
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return ipv4Refusal(parsed as ipaddr.IPv4, allowLoopback);
  const v6 = parsed as ipaddr.IPv6;
  if (v6.zoneId) return 'scoped IPv6 address';
  const range = v6.range();
  if (range === 'ipv4Mapped') return ipv4Refusal(v6.toIPv4Address(), allowLoopback);
  if (IPV4_EMBEDDING_RANGES.has(range)) return `IPv6 ${range} address`;
  if (range === 'loopback') return allowLoopback ? null : 'IPv6 loopback';
  // IPv4-compatible addresses (::a.b.c.d, deprecated) and everything else outside global unicast 2000::/3.
  if (v6.parts[0]! >>> 13 !== 0b001) return `IPv6 ${range === 'unicast' ? 'non-global' : range} address`;
  if (range !== 'unicast') return `IPv6 ${range} address`;
  return null;
}

function ipv4Refusal(v4: ipaddr.IPv4, allowLoopback: boolean): string | null {
  const range = v4.range();
  if (range === 'loopback') return allowLoopback ? null : 'IPv4 loopback';
  if (range !== 'unicast') return `IPv4 ${range} address`;
  if (METADATA_ADDRESSES.has(v4.toString())) return 'cloud metadata address';
  return null;
}

function nameRefusal(hostname: string, allowLoopback: boolean): string | null {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  if (name === '') return 'empty host';
  if (allowLoopback && (name === 'localhost' || name.endsWith('.localhost'))) return null;
  if (FORBIDDEN_NAMES.has(name)) return `host name ${name} is local`;
  for (const suffix of FORBIDDEN_SUFFIXES) {
    if (name.endsWith(suffix)) return `host names under ${suffix} are local`;
  }
  // A single label ("intranet") can only be resolved by a local search domain.
  if (!name.includes('.')) return 'single-label host names are local';
  return null;
}

/** The host of a parsed URL without IPv6 brackets. */
function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** True when `host` (bare, from a parsed URL) names the machine itself: a loopback literal or a `localhost` name. */
function isLoopbackHost(host: string): boolean {
  if (isIP(host)) {
    const parsed = ipaddr.process(host);
    return parsed.range() === 'loopback';
  }
  return isLocalhostName(host);
}

/** `localhost` or a name under it (RFC 6761 §6.3), trailing dot and case ignored. */
function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * Syntactic checks of a user-given URL, without DNS: an accepted scheme, no credentials, no literal forbidden
 * address and no local host name. Used when a URL is stored (a webhook subscription, a connector); fetching repeats
 * them and checks the DNS answers.
 */
export function checkTargetUrl(raw: string | URL, policy: TargetPolicy = {}): URL {
  const text = typeof raw === 'string' ? raw : raw.href;
  if (text.length > URL_MAX_LENGTH) throw new TargetRefusedError('invalid_url', `URL longer than ${URL_MAX_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TargetRefusedError('invalid_url', 'not a valid absolute URL');
  }
  const protocols = policy.protocols ?? ALL_PROTOCOLS;
  const allowLoopback = policy.allowLoopback ?? false;
  const host = bareHost(url);
  const plainHttpToLoopback = allowLoopback && url.protocol === 'http:' && isLoopbackHost(host);
  if (!(protocols as readonly string[]).includes(url.protocol) && !plainHttpToLoopback) {
    throw new TargetRefusedError('scheme_not_allowed', `URLs must use ${protocols.map((p) => p.slice(0, -1)).join(' or ')}`);
  }
  if (url.username || url.password) throw new TargetRefusedError('credentials_in_url', 'URLs must not carry credentials');
  if (isIP(host)) {
    const refusal = addressRefusal(host, allowLoopback);
    if (refusal) throw new TargetRefusedError('forbidden_address', `${refusal} is not allowed`);
  } else {
    const refusal = nameRefusal(host, allowLoopback);
    if (refusal) throw new TargetRefusedError('forbidden_name', refusal);
  }
  return url;
}

/** A webhook receiver's URL: https only (plain http only for loopback receivers, and only when those are allowed). */
export function checkWebhookUrl(raw: string, options: { allowLoopback?: boolean } = {}): URL {
  return checkTargetUrl(raw, { protocols: ['https:'], allowLoopback: options.allowLoopback ?? false });
}

/** Resolves and checks targets; one instance per client (a worker, a crawler). */
export class TargetGuard {
  readonly allowLoopback: boolean;
  private readonly protocols: readonly Protocol[];
  private readonly lookup: HostLookup;
  private readonly maxAddresses: number;
  private readonly lookupTimeoutMs: number;

  constructor(options: TargetGuardOptions = {}) {
    this.allowLoopback = options.allowLoopback ?? false;
    this.protocols = options.protocols ?? ALL_PROTOCOLS;
    this.lookup = options.lookup ?? defaultLookup;
    this.maxAddresses = options.maxAddresses ?? 32;
    this.lookupTimeoutMs = options.lookupTimeoutMs ?? 10_000;
  }

  /** True when a connection to `address` is allowed (used again on the connected socket as a second line). */
  isAllowedAddress(address: string): boolean {
    return addressRefusal(address, this.allowLoopback) === null;
  }

  /**
   * Checks the URL, resolves its host and checks every address. One forbidden address refuses the whole target:
   * a name that mixes public and private answers is hostile. Returns the address to pin the connection to. The
   * resolution ends at `lookupTimeoutMs` (refused as a name that does not resolve) or when `signal` aborts (its
   * reason is thrown), whichever comes first.
   */
  async resolve(raw: string | URL, signal?: AbortSignal): Promise<ResolvedTarget> {
    const url = checkTargetUrl(raw, { protocols: this.protocols, allowLoopback: this.allowLoopback });
    const hostname = bareHost(url);
    const port = url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol as Protocol];
    // Plain http outside the accepted schemes was let through only for a loopback host: its answers must all be
    // loopback too (a hosts file could point `localhost` elsewhere).
    const loopbackOnly = !(this.protocols as readonly string[]).includes(url.protocol);
    const literal = isIP(hostname);
    if (literal) return { url, hostname, port, address: hostname, family: literal === 6 ? 6 : 4 };
    // RFC 6761 §6.3: a `localhost` name is the loopback address, whatever a resolver says (many system resolvers do
    // not answer `<name>.localhost` at all). Only reachable when loopback is allowed (local testing).
    if (this.allowLoopback && isLocalhostName(hostname)) return { url, hostname, port, address: '127.0.0.1', family: 4 };

    // A name that does not resolve and one that resolves to an address Lore may not reach are refused in the same
    // words: telling them apart would let any caller map which internal names exist (a DNS oracle). `reason` keeps
    // them apart for code and metrics.
    const refused = (reason: 'unresolvable' | 'forbidden_address') => new TargetRefusedError(reason, `${hostname} does not resolve to an address Lore may reach`, true);
    let answers: ResolvedAddress[];
    signal?.throwIfAborted();
    try {
      answers = await this.boundedLookup(hostname, signal);
    } catch (err) {
      if (signal?.aborted && err === signal.reason) throw err;
      throw refused('unresolvable');
    }
    if (answers.length === 0 || answers.length > this.maxAddresses) throw refused('unresolvable');
    for (const answer of answers) {
      if (addressRefusal(answer.address, this.allowLoopback)) throw refused('forbidden_address');
      if (loopbackOnly && ipaddr.process(answer.address).range() !== 'loopback') {
        throw new TargetRefusedError('scheme_not_allowed', `plain http is accepted only for loopback hosts, and ${hostname} is not one`);
      }
    }
    const chosen = answers[0]!;
    return { url, hostname, port, address: chosen.address, family: isIP(chosen.address) === 6 ? 6 : 4 };
  }

  /** The lookup, given up at `lookupTimeoutMs` (an error) or when `signal` aborts (its reason). */
  private boundedLookup(hostname: string, signal: AbortSignal | undefined): Promise<ResolvedAddress[]> {
    return new Promise<ResolvedAddress[]>((resolve, reject) => {
      const timer = setTimeout(() => finish(() => reject(new Error(`no answer for ${hostname} within ${this.lookupTimeoutMs} ms`))), this.lookupTimeoutMs);
      const onAbort = () => finish(() => reject(signal!.reason));
      let done = false;
      const finish = (settle: () => void) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        settle();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.lookup(hostname).then(
        (answers) => finish(() => resolve(answers)),
        (err: unknown) => finish(() => reject(err)),
      );
    });
  }
}
