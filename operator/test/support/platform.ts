import { Redis } from 'ioredis';
import { IdentitySigner, KafkaBus, PostgresBlobStore, PostgresDb, createLogger, createMetricsRegistry, listen, type StartedServer } from '@lore/runtime';
import { createGateway, gatewayConfig, RedisGatewayState } from '@lore/gateway';
import { createGraphService } from '@lore/graph';
import { freshDatabase, requireEnv, type TestDatabase } from '../../../test/support/infra';
import { testEncryptionKeys } from '../../../test/support/encryption';

export const ADMIN_TOKEN = 'operator-suite-admin-token-0123456789';
const IDENTITY_SECRET = 'operator-suite-identity-secret-0123456789abcdef';
const SESSION_SECRET = 'operator-suite-session-secret-0123456789abcdef';

import { closeIdleHttpConnections } from '../../../test/support/http';

export { http, type HttpResult } from '../../../test/support/http';

export interface Platform {
  publicUrl: string;
  adminUrl: string;
  database: TestDatabase;
  db: PostgresDb;
  /** Keys of a memory that would authenticate now, read from the gateway's own table. */
  workingKeysOfMemory(memoryId: string): Promise<string[]>;
  /** Working keys by their platform name (the operator names ApiKey keys `<namespace>/<name>`). */
  workingKeysNamed(name: string): Promise<string[]>;
  /** Keys of a tenant that would authenticate now. */
  workingKeysOfTenant(tenantId: string): Promise<string[]>;
  keyRow(keyId: string): Promise<{ revoked_at: string | null; expires_at: string | null } | undefined>;
  /** The id of the key a create or rotate call with this client token made, read from the gateway's table. */
  keyIdByClientToken(tenantId: string, clientToken: string): Promise<string | undefined>;
  close(): Promise<void>;
}

/**
 * The real platform a Memory is provisioned into: the gateway (public and internal admin listeners) and the
 * graph service (memory data plane, its worker consuming Kafka) on one fresh PostgreSQL database, real Redis
 * and real Kafka, the gateway forwarding memory routes to the graph service.
 */
export async function startPlatform(): Promise<Platform> {
  const database = await freshDatabase('lore_op');
  const signer = new IdentitySigner(IDENTITY_SECRET);
  const logger = createLogger({ level: 'silent', service: 'platform' });
  const db = await new PostgresDb({ url: database.url, ownerUrl: database.ownerUrl, maxConnections: 10 }).init();
  const suffix = database.name;
  const bus = new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), clientId: `op-${suffix}`, logger, partitions: 2 });
  const graph = await createGraphService({
    db,
    bus,
    blobs: new PostgresBlobStore(db),
    logger,
    metrics: createMetricsRegistry('graph', { defaultMetrics: false }),
    signer,
    ocr: null,
    consumerGroup: `graph-worker-${suffix}`,
  });
  await graph.worker.start();
  const graphServer = await listen(graph.app, 0, '127.0.0.1');
  const graphUrl = graphServer.url;
  const redis = new Redis(requireEnv('LORE_TEST_REDIS_URL'), { maxRetriesPerRequest: 1 });
  const state = new RedisGatewayState(redis, { prefix: `lore:op-test:${database.name}:` });
  const gateway = await createGateway(
    {
      db,
      state,
      logger,
      metrics: createMetricsRegistry('gateway', { defaultMetrics: false }),
      signer,
      config: gatewayConfig({
        adminToken: ADMIN_TOKEN,
        upstreams: { graph: graphUrl },
        // Caches on: revocation and rotation must still take effect on the very next request.
        sessions: { secret: SESSION_SECRET, cookieSecure: false },
        encryptionKeys: testEncryptionKeys(),
      }),
    },
    { migrate: true },
  );
  const servers: StartedServer[] = [await listen(gateway.publicApp, 0, '127.0.0.1'), await listen(gateway.adminApp, 0, '127.0.0.1')];

  /** Ids of the keys that still authenticate (not revoked, not expired) whose `column` holds `value`. */
  async function workingKeys(column: 'memory_id' | 'name' | 'tenant_id', value: string): Promise<string[]> {
    const r = await db.asOwner((sql) =>
      sql.query<{ key_id: string }>(
        `SELECT key_id FROM gateway.api_keys WHERE ${column} = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) ORDER BY key_id`,
        [value],
      ),
    );
    return r.rows.map((x) => x.key_id);
  }

  return {
    publicUrl: servers[0]!.url,
    adminUrl: servers[1]!.url,
    database,
    db,
    workingKeysOfMemory: (memoryId) => workingKeys('memory_id', memoryId),
    workingKeysNamed: (name) => workingKeys('name', name),
    workingKeysOfTenant: (tenantId) => workingKeys('tenant_id', tenantId),
    async keyIdByClientToken(tenantId, clientToken) {
      const r = await db.asOwner((sql) =>
        sql.query<{ key_id: string }>(`SELECT key_id FROM gateway.api_keys WHERE tenant_id = $1 AND client_token = $2`, [tenantId, clientToken]),
      );
      return r.rows[0]?.key_id;
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
      await graphServer.close(100);
      await graph.worker.stop();
      await graph.close();
      await bus.close();
      await state.close();
      await db.close();
      await database.drop();
      closeIdleHttpConnections();
    },
  };
}
