import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac, randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { IdentitySigner, PostgresDb, createLogger, createMetricsRegistry, listen, readRawBody, type Logger, type StartedServer } from '@lore/runtime';
import { createGateway, gatewayConfig, RedisGatewayState, type Gateway, type GatewayConfig } from '@lore/gateway';
import { freshDatabase, requireEnv, type TestDatabase } from '../support/infra';
import { TEST_ENCRYPTION_KEYS, testEncryptionKeys } from '../support/encryption';

export const IDENTITY_SECRET = 'test-identity-secret-0123456789abcdef';
export const SESSION_SECRET = 'test-session-secret-0123456789abcdef';
export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
/** `LORE_ENCRYPTION_KEYS` of every gateway the suites start (the webhooks suites' worker uses the same ring). */
export const ENCRYPTION_KEYS = TEST_ENCRYPTION_KEYS;

import { http, type HttpResult } from '../support/http';

export { http, type HttpResult };

/** An upstream that answers every request with what it received, so tests can see exactly what got through. */
export interface EchoUpstream {
  url: string;
  server: Server;
  received: Array<{ method: string; url: string; headers: IncomingHttpHeaders; bodyBytes: number }>;
  close(): Promise<void>;
}

export async function startEcho(opts: { socketPath?: string } = {}): Promise<EchoUpstream> {
  const received: EchoUpstream['received'] = [];
  const server = createServer((req, res) => {
    if (req.url?.includes('/slow')) return; // never answers: timeout tests
    let bytes = 0;
    if (req.url?.includes('/refuse-large')) {
      // Refuses a body over 2 MiB as soon as it has read that much, and reads no further: the services' own body
      // reader, so the rest of the body never leaves the connection.
      readRawBody(req, 2 * 1024 * 1024).then(
        (body) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ body_bytes: body.length })),
        () => res.writeHead(413, { 'content-type': 'application/json' }).end(JSON.stringify({ refused: true })),
      );
      return;
    }
    if (req.url?.includes('/early')) {
      // Answers on the first body chunk: proves the gateway streams request bodies instead of buffering them.
      req.once('data', (c: Buffer) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(JSON.stringify({ first_chunk_bytes: c.length }));
        req.on('end', () => res.end());
      });
      req.on('data', () => undefined);
      return;
    }
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, bodyBytes: bytes });
      if (received.length > 20_000) received.splice(0, 10_000);
      if (req.url?.includes('/endless')) {
        // An event stream that never ends by itself (a workflow's, an MCP session's): the client or the gateway ends it.
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        const tick = setInterval(() => res.write('event: tick\ndata: {}\n\n'), 50);
        res.on('close', () => clearInterval(tick));
        return;
      }
      if (req.url?.includes('/stream')) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write('event: sources\ndata: []\n\n');
        setTimeout(() => res.write('event: token\ndata: "hello"\n\n'), 150);
        setTimeout(() => res.end('event: done\ndata: {}\n\n'), 300);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body_bytes: bytes }));
    });
  });
  const upgraded = new Set<import('node:stream').Duplex>();
  server.on('upgrade', (req, socket) => {
    upgraded.add(socket);
    socket.on('close', () => upgraded.delete(socket));
    socket.on('error', () => socket.destroy());
    received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, bodyBytes: 0 });
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    socket.on('data', (d: Buffer) => socket.write(d));
  });
  if (opts.socketPath) await new Promise<void>((r) => server.listen(opts.socketPath, () => r()));
  else await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = opts.socketPath ? `unix:${opts.socketPath}` : `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    server,
    received,
    close: () =>
      new Promise<void>((r) => {
        for (const s of upgraded) s.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface GatewayUnderTest {
  gateway: Gateway;
  publicUrl: string;
  adminUrl: string;
  db: PostgresDb;
  redis: Redis;
  state: RedisGatewayState;
  signer: IdentitySigner;
  servers: StartedServer[];
  close(): Promise<void>;
}

/** One gateway instance on real PostgreSQL and Redis; several may share a database and a Redis prefix. */
export async function startGateway(
  database: TestDatabase,
  overrides: Partial<Omit<GatewayConfig, 'sessions'>> = {},
  opts: { redisPrefix: string; migrate?: boolean; redisUrl?: string; logger?: Logger },
): Promise<GatewayUnderTest> {
  const db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl, maxConnections: 10 }).init();
  const redis = new Redis(opts.redisUrl ?? requireEnv('LORE_TEST_REDIS_URL'), { maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  const state = new RedisGatewayState(redis, { prefix: opts.redisPrefix });
  const signer = new IdentitySigner(IDENTITY_SECRET);
  const config = gatewayConfig({
    adminToken: ADMIN_TOKEN,
    encryptionKeys: testEncryptionKeys(),
    ...overrides,
    sessions: { secret: SESSION_SECRET, cookieSecure: false },
  });
  const gateway = await createGateway(
    { db, state, logger: opts.logger ?? createLogger({ level: 'silent', service: 'gateway-test' }), metrics: createMetricsRegistry('gateway-test', { defaultMetrics: false }), signer, config },
    { migrate: opts.migrate ?? true, checkResponses: true },
  );
  const pub = await listen(gateway.publicApp, 0, '127.0.0.1');
  pub.server.on('upgrade', gateway.handleUpgrade);
  const admin = await listen(gateway.adminApp, 0, '127.0.0.1');
  return {
    gateway,
    publicUrl: pub.url,
    adminUrl: admin.url,
    db,
    redis,
    state,
    signer,
    servers: [pub, admin],
    async close() {
      await gateway.close();
      await pub.close(100);
      await admin.close(100);
      await state.close().catch(() => redis.disconnect());
      await db.close();
    },
  };
}

/**
 * An HS256 JWT signed with the test gateways' session secret: lets a suite build sessions a gateway could have
 * issued (expired ones, ones from a replica with another clock) without waiting for them.
 */
export function signSessionJwt(payload: Record<string, unknown>): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const unsigned = `${part({ alg: 'HS256', typ: 'JWT' })}.${part(payload)}`;
  return `${unsigned}.${createHmac('sha256', SESSION_SECRET).update(unsigned).digest('base64url')}`;
}

/** The claims of a JWT (signature not checked). */
export function jwtClaims(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

export function adminCall(g: { adminUrl: string }, method: string, path: string, body?: unknown): Promise<HttpResult> {
  return http(g.adminUrl, method, path, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });
}

export interface TenantFixture {
  tenantId: string;
  key: string;
  keyId: string;
  workspaceId: string;
  memoryId: string;
}

export function uid(): string {
  return randomBytes(5).toString('hex');
}

/** A tenant with its default workspace and a ck_live_ key, made through the admin API like the operator does. */
export async function makeTenant(g: { adminUrl: string; publicUrl: string }, keyOptions: Record<string, unknown> = {}): Promise<TenantFixture> {
  const tenantId = `t-${uid()}`;
  const t = await adminCall(g, 'POST', '/internal/v1/tenants', { tenant_id: tenantId, name: `Tenant ${tenantId}` });
  if (t.status !== 201) throw new Error(`tenant creation failed: ${t.status} ${t.text}`);
  const k = await adminCall(g, 'POST', `/internal/v1/tenants/${tenantId}/keys`, { type: 'live', name: 'main', ...keyOptions });
  if (k.status !== 201) throw new Error(`key creation failed: ${k.status} ${k.text}`);
  const ws = await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: { 'x-api-key': k.json.key } });
  if (ws.status !== 200) throw new Error(`workspace listing failed: ${ws.status} ${ws.text}`);
  return { tenantId, key: k.json.key, keyId: k.json.key_id, workspaceId: ws.json.active_workspace_id, memoryId: ws.json.workspaces[0].primary_memory_id };
}

export async function makeKey(g: { adminUrl: string }, tenantId: string, options: Record<string, unknown>): Promise<{ key: string; keyId: string; expiresAt: string | null }> {
  const k = await adminCall(g, 'POST', `/internal/v1/tenants/${tenantId}/keys`, { type: 'live', name: 'k', ...options });
  if (k.status !== 201) throw new Error(`key creation failed: ${k.status} ${k.text}`);
  return { key: k.json.key, keyId: k.json.key_id, expiresAt: k.json.expires_at };
}

export { freshDatabase };
