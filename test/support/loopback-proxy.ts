import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect as tcpConnect, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * An egress proxy for tests: a real HTTP forward proxy on a loopback port that records what went through it. It
 * speaks the protocol a forward proxy speaks (RFC 9110 §9.3.6, RFC 9112 §3.2.2):
 *
 * - a request in absolute form (`GET http://host:port/path HTTP/1.1`) is forwarded to that origin, the hop-by-hop
 *   headers (`Proxy-Authorization`, `Proxy-Connection`, `Connection` …) dropped, and the origin's answer relayed;
 * - `CONNECT host:port` opens a TCP tunnel to that authority and answers `200 Connection Established`; the bytes
 *   inside (a TLS session) are relayed untouched;
 * - a request in origin form (`GET /path`, what a client sends when it forgot it talks to a proxy) answers 400;
 * - with `credentials`, a request without the matching `Proxy-Authorization: Basic …` answers 407 with
 *   `Proxy-Authenticate`, and nothing is forwarded.
 *
 * Names ending in `.localhost` (the test world's sites) resolve to 127.0.0.1, as the world's own resolver does;
 * any other name is refused with 502 (a test proxy reaches nothing but this machine). `label` names the proxy in
 * what it records (a country's proxy: `de`, `fr`).
 */

export interface ProxiedRequest {
  /** The proxy's label. */
  proxy: string;
  /** `CONNECT` for a tunnel, else the forwarded method. */
  method: string;
  /** The request target as it arrived: `host:port` for CONNECT, the absolute URL otherwise. */
  target: string;
  /** The `Host` header the client sent to the proxy (for CONNECT, the authority again). */
  host: string | undefined;
  /** The `Proxy-Authorization` header as sent, or undefined. */
  authorization: string | undefined;
  /** The status the proxy answered (200 for an opened tunnel). */
  status: number;
  at: number;
}

export interface LoopbackProxyOptions {
  label?: string;
  /** Required `user:password` (Basic); without it the proxy asks for nothing. */
  credentials?: { user: string; password: string };
}

const HOP_BY_HOP = new Set(['proxy-authorization', 'proxy-connection', 'connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authenticate']);

/** 127.0.0.1 for loopback names; null (refused) for every other name. */
function resolveForTest(hostname: string): string | null {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost') || h === '127.0.0.1') return '127.0.0.1';
  if (h === '::1') return '::1';
  return null;
}

export class LoopbackProxy {
  readonly label: string;
  readonly requests: ProxiedRequest[] = [];
  private server: Server | null = null;
  private readonly sockets = new Set<Socket | Duplex>();
  private port = 0;

  constructor(private readonly options: LoopbackProxyOptions = {}) {
    this.label = options.label ?? 'proxy';
  }

  /** `http://127.0.0.1:<port>` (with the credentials, when the proxy requires them). */
  get url(): string {
    const c = this.options.credentials;
    return `http://${c ? `${encodeURIComponent(c.user)}:${encodeURIComponent(c.password)}@` : ''}127.0.0.1:${this.port}`;
  }

  /** What went through for one target host (its name, or its address for a pinned CONNECT). */
  requestsFor(host: string): ProxiedRequest[] {
    return this.requests.filter((r) => r.target.includes(`//${host}`) || r.target.startsWith(`${host}:`) || r.host?.startsWith(host));
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => this.forward(req, res));
    server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => this.tunnel(req, client, head));
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = null;
  }

  private record(req: IncomingMessage, status: number): void {
    this.requests.push({ proxy: this.label, method: req.method ?? '', target: req.url ?? '', host: req.headers.host, authorization: req.headers['proxy-authorization'], status, at: Date.now() });
  }

  private authorised(headers: IncomingHttpHeaders): boolean {
    const c = this.options.credentials;
    if (!c) return true;
    return headers['proxy-authorization'] === `Basic ${Buffer.from(`${c.user}:${c.password}`).toString('base64')}`;
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    const refuse = (status: number, message: string, headers: Record<string, string> = {}) => {
      this.record(req, status);
      req.resume();
      res.writeHead(status, { 'content-type': 'text/plain', ...headers });
      res.end(message);
    };
    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      return refuse(400, 'a proxy needs the request target in absolute form');
    }
    if (target.protocol !== 'http:') return refuse(400, 'only http targets are forwarded; tunnel https with CONNECT');
    if (!this.authorised(req.headers)) return refuse(407, 'proxy authentication required', { 'proxy-authenticate': 'Basic realm="lore-test"' });
    const address = resolveForTest(target.hostname);
    if (!address) return refuse(502, `${target.hostname} is not reachable from this proxy`);
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    headers.host = target.host;
    const upstream = httpRequest({ host: address, port: Number(target.port || 80), method: req.method, path: `${target.pathname}${target.search}`, headers }, (answer) => {
      this.record(req, answer.statusCode ?? 502);
      const out: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
      res.writeHead(answer.statusCode ?? 502, out);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (res.headersSent) return void res.destroy();
      refuse(502, 'the origin could not be reached');
    });
    req.pipe(upstream);
  }

  private tunnel(req: IncomingMessage, client: Duplex, head: Buffer): void {
    this.sockets.add(client);
    client.on('close', () => this.sockets.delete(client));
    client.on('error', () => undefined);
    const answer = (status: number, reason: string, extra = '') => {
      this.record(req, status);
      client.end(`HTTP/1.1 ${status} ${reason}\r\n${extra}content-length: 0\r\n\r\n`);
    };
    if (!this.authorised(req.headers)) return answer(407, 'Proxy Authentication Required', 'proxy-authenticate: Basic realm="lore-test"\r\n');
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(req.url ?? '');
    if (!m) return answer(400, 'Bad Request');
    const address = resolveForTest(m[1]!);
    if (!address) return answer(502, 'Bad Gateway');
    const upstream = tcpConnect({ host: address, port: Number(m[2]) });
    this.sockets.add(upstream);
    upstream.on('close', () => this.sockets.delete(upstream));
    upstream.once('connect', () => {
      this.record(req, 200);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => {
      if (upstream.readyState === 'opening' || !upstream.remoteAddress) answer(502, 'Bad Gateway');
      else client.destroy();
    });
  }
}
