import { createServer, request, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { IdentitySigner, PostgresDb, createLogger, createMetricsRegistry, listen, type StartedServer } from '@lore/runtime';
import { createGateway, gatewayConfig, RedisGatewayState } from '@lore/gateway';
import { freshDatabase, requireEnv, type TestDatabase } from '../../../test/support/infra';

export const ADMIN_TOKEN = 'operator-suite-admin-token-0123456789';
const IDENTITY_SECRET = 'operator-suite-identity-secret-0123456789abcdef';
const SESSION_SECRET = 'operator-suite-session-secret-0123456789abcdef';

export interface HttpResult {
  status: number;
  text: string;
  json: any;
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** Plain HTTP (unlike fetch it may set Host), for talking to the gateway as a client on a memory host would. */
export function http(baseUrl: string, method: string, path: string, opts: { headers?: Record<string, string>; body?: unknown } = {}): Promise<HttpResult> {
  const u = new URL(baseUrl);
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

export interface Platform {
  publicUrl: string;
  adminUrl: string;
  database: TestDatabase;
  db: PostgresDb;
  /** Requests the memory data plane received, with the identity the gateway signed for each. */
  graphCalls: Array<{ path: string; memory_id: string; tenant_id: string; credential: string }>;
  /** Keys of a memory that would authenticate now, read from the gateway's own table. */
  workingKeysOfMemory(memoryId: string): Promise<string[]>;
  /** Working keys by their platform name (the operator names ApiKey keys `<namespace>/<name>`). */
  workingKeysNamed(name: string): Promise<string[]>;
  keyRow(keyId: string): Promise<{ revoked_at: string | null; expires_at: string | null } | undefined>;
  close(): Promise<void>;
}

/**
 * The real gateway (public and internal admin listeners) on a fresh PostgreSQL database and real Redis, with
 * the memory routes forwarded to a data-plane upstream that checks the gateway's signed identity and answers
 * 200 with it. The graph service owns those routes in a full install; here the point is what the gateway lets
 * through for a key the operator provisioned.
 */
export async function startPlatform(): Promise<Platform> {
  const database = await freshDatabase('lore_op');
  const signer = new IdentitySigner(IDENTITY_SECRET);
  const graphCalls: Platform['graphCalls'] = [];
  const graph: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      void signer
        .verify(String(req.headers['x-lore-identity'] ?? ''))
        .then((idn) => {
          graphCalls.push({ path: req.url ?? '', memory_id: idn.memory_id, tenant_id: idn.tenant_id, credential: idn.credential });
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ answer: 'ok [1]', citations: [{ index: 1, title: 't', document_id: 'd' }], chunk_count: 1, suggested_followups: [], memory_id: idn.memory_id }));
        })
        .catch(() => {
          res.writeHead(401, { 'content-type': 'application/json' });
          res.end('{"error":"no identity"}');
        });
    });
  });
  await new Promise<void>((r) => graph.listen(0, '127.0.0.1', () => r()));
  const graphUrl = `http://127.0.0.1:${(graph.address() as AddressInfo).port}`;

  const db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl, maxConnections: 10 }).init();
  const redis = new Redis(requireEnv('LORE_TEST_REDIS_URL'), { maxRetriesPerRequest: 1 });
  const state = new RedisGatewayState(redis, { prefix: `lore:op-test:${database.name}:` });
  const gateway = await createGateway(
    {
      db,
      state,
      logger: createLogger({ level: 'silent', service: 'gateway' }),
      metrics: createMetricsRegistry('gateway', { defaultMetrics: false }),
      signer,
      config: gatewayConfig({
        adminToken: ADMIN_TOKEN,
        upstreams: { graph: graphUrl },
        // Caches on: revocation and rotation must still take effect on the very next request.
        sessions: { secret: SESSION_SECRET, cookieSecure: false },
      }),
    },
    { migrate: true },
  );
  const servers: StartedServer[] = [await listen(gateway.publicApp, 0, '127.0.0.1'), await listen(gateway.adminApp, 0, '127.0.0.1')];

  return {
    publicUrl: servers[0]!.url,
    adminUrl: servers[1]!.url,
    database,
    db,
    graphCalls,
    async workingKeysOfMemory(memoryId) {
      const r = await db.asOwner((sql) =>
        sql.query<{ key_id: string }>(
          `SELECT key_id FROM gateway.api_keys WHERE memory_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) ORDER BY key_id`,
          [memoryId],
        ),
      );
      return r.rows.map((x) => x.key_id);
    },
    async workingKeysNamed(name) {
      const r = await db.asOwner((sql) =>
        sql.query<{ key_id: string }>(
          `SELECT key_id FROM gateway.api_keys WHERE name = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) ORDER BY key_id`,
          [name],
        ),
      );
      return r.rows.map((x) => x.key_id);
    },
    async keyRow(keyId) {
      const r = await db.asOwner((sql) =>
        sql.query<{ revoked_at: string | null; expires_at: string | null }>(`SELECT revoked_at, expires_at FROM gateway.api_keys WHERE key_id = $1`, [keyId]),
      );
      return r.rows[0];
    },
    async close() {
      for (const s of servers) await s.close(100);
      await gateway.close();
      await state.close();
      await db.close();
      graph.closeAllConnections();
      await new Promise<void>((r) => graph.close(() => r()));
      await database.drop();
      agent.destroy();
    },
  };
}
