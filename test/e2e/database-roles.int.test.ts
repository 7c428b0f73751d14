import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import {
  ConfigError,
  createLogger,
  createMetricsRegistry,
  IdentitySigner,
  KafkaBus,
  Lifecycle,
  listen,
  opsRouter,
  PostgresBlobStore,
  PostgresDb,
  type StartedServer,
} from '@lore/runtime';
import { createGateway, gatewayConfig, RedisGatewayState, type Gateway } from '@lore/gateway';
import { createGraphService, type GraphService } from '@lore/graph';
import { requireEnv } from '../support/infra';
import { asSuperuser, migrate, pgUrl, prepareInstall, REPO_ROOT as ROOT, runProcess, type Install } from '../support/install';
import { TEST_ENCRYPTION_KEYS, testEncryptionKeys } from '../support/encryption';
import { ADMIN_TOKEN, http, IDENTITY_SECRET, makeTenant, SESSION_SECRET } from '../gateway/harness';
import { eventually } from '../memory/support';

jest.setTimeout(240_000);

const logger = createLogger({ level: 'silent', service: 'roles-test' });

const vectorsExpected = process.env.LORE_TEST_PG_VECTOR === '1';

beforeAll(() => {
  // The migrations script and the entry points run from dist/, as in the image.
  try {
    execFileSync('npx', ['tsc', '-b', 'services/gateway', 'services/graph'], { cwd: ROOT, stdio: 'pipe', encoding: 'utf8' });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`tsc -b failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`.slice(0, 6000));
  }
});

describe('an install with its own role names: migrations as the owner, processes as the application role', () => {
  let install: Install;
  let graphDb: PostgresDb;
  let gatewayDb: PostgresDb;
  let bus: KafkaBus;
  let redis: Redis;
  let graph: GraphService;
  let gateway: Gateway;
  const servers: StartedServer[] = [];
  let graphUrl: string;
  let publicUrl: string;
  let adminUrl: string;
  let gatewayOpsUrl: string;

  beforeAll(async () => {
    install = await prepareInstall('roles');
    const m = await migrate(install);
    if (m.code !== 0) throw new Error(`migrations failed:\n${m.output}`);

    // Each composition gets only the application role's URL, as the chart's deployments do.
    const metrics = createMetricsRegistry('roles-graph', { defaultMetrics: false });
    const graphLifecycle = new Lifecycle(logger);
    graphDb = await new PostgresDb({ url: install.appUrl }).init();
    bus = new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), clientId: `roles-${install.app}`, logger, partitions: 2 });
    graph = await createGraphService({
      db: graphDb,
      bus,
      blobs: new PostgresBlobStore(graphDb),
      logger,
      metrics,
      signer: new IdentitySigner(IDENTITY_SECRET),
      ocr: null,
      migrate: false,
      lifecycle: graphLifecycle,
      consumerGroup: `graph-worker-${install.name}`,
    });
    graph.app.use(opsRouter(graphLifecycle, metrics).routes());
    await graph.worker.start();
    const g = await listen(graph.app, 0, '127.0.0.1');
    servers.push(g);
    graphUrl = g.url;
    graphLifecycle.markStarted();

    const gatewayLifecycle = new Lifecycle(logger);
    gatewayDb = await new PostgresDb({ url: install.appUrl }).init();
    redis = new Redis(requireEnv('LORE_TEST_REDIS_URL'), { maxRetriesPerRequest: 1 });
    gateway = await createGateway(
      {
        db: gatewayDb,
        state: new RedisGatewayState(redis, { prefix: `roles-${install.name}:` }),
        logger,
        metrics: createMetricsRegistry('roles-gateway', { defaultMetrics: false }),
        signer: new IdentitySigner(IDENTITY_SECRET),
        config: gatewayConfig({
          adminToken: ADMIN_TOKEN,
          encryptionKeys: testEncryptionKeys(),
          upstreams: { graph: graphUrl },
          sessions: { secret: SESSION_SECRET, cookieSecure: false },
        }),
      },
      { lifecycle: gatewayLifecycle, migrate: false, sealStoredSecrets: false },
    );
    const pub = await listen(gateway.publicApp, 0, '127.0.0.1');
    const admin = await listen(gateway.adminApp, 0, '127.0.0.1');
    const ops = await listen(gateway.opsApp!, 0, '127.0.0.1');
    servers.push(pub, admin, ops);
    publicUrl = pub.url;
    adminUrl = admin.url;
    gatewayOpsUrl = ops.url;
    gatewayLifecycle.markStarted();
  });

  afterAll(async () => {
    await gateway?.close();
    await graph?.close();
    for (const s of servers.reverse()) await s.close(100);
    await bus?.close();
    redis?.disconnect();
    await gatewayDb?.close();
    await graphDb?.close();
    await install?.drop();
  });

  it('grants every schema to the role LORE_DATABASE_URL logs in as, not to lore_app, and puts pgvector in public', async () => {
    const r = await asSuperuser(install.name, (c) =>
      c.query<{ schema: string; named: boolean; fixed: boolean }>(
        `SELECT s AS schema, has_schema_privilege($1, s, 'USAGE') AS named, has_schema_privilege('lore_app', s, 'USAGE') AS fixed
           FROM unnest(ARRAY['runtime', 'gateway', 'graph']) s ORDER BY 1`,
        [install.app],
      ),
    );
    expect(r.rows).toEqual([
      { schema: 'gateway', named: true, fixed: false },
      { schema: 'graph', named: true, fixed: false },
      { schema: 'runtime', named: true, fixed: false },
    ]);
    const ext = await asSuperuser(install.name, (c) =>
      c.query<{ schema: string }>(`SELECT extnamespace::regnamespace::text AS schema FROM pg_extension WHERE extname = 'vector'`),
    );
    expect(ext.rows).toEqual(vectorsExpected ? [{ schema: 'public' }] : []);
  });

  it('answers an admin call and a memory search through the gateway, with vectors where the server has pgvector', async () => {
    expect(graph.describe()).toMatchObject({ vectors: vectorsExpected, retrieval: vectorsExpected ? 'hybrid' : 'lexical' });
    const tenant = await makeTenant({ adminUrl, publicUrl });
    const call = (method: string, path: string, body?: unknown) => http(publicUrl, method, path, { headers: { 'x-api-key': tenant.key }, body });
    const ingest = await call('POST', '/api/v1/memory/ingest', { content: 'The Kestrel archive is stored in Reykjavik.', content_type: 'text', routing: { mode: 'auto' } });
    expect(ingest.status).toBe(200);
    await eventually(async () => {
      const d = await call('GET', `/api/v1/memory/documents/${ingest.json.doc_id}`);
      return d.status === 200 && d.json.status === 'indexed' ? true : undefined;
    }, 60_000, 'the document to be indexed');
    const search = await call('POST', '/api/v1/memory/search', { query: 'Where is the Kestrel archive stored?' });
    expect(search.status).toBe(200);
    expect(search.json.citations).toEqual([{ index: 1, title: expect.any(String), document_id: ingest.json.doc_id }]);
    if (vectorsExpected) {
      // The embedding was written and is read back through the type as the application role resolves it.
      const n = await graphDb.withTenant(tenant.tenantId, (sql) =>
        sql.query<{ n: string }>(`SELECT count(*) AS n FROM graph.chunks WHERE embedding IS NOT NULL AND (embedding <=> embedding) IS NOT NULL`),
      );
      expect(Number(n.rows[0]?.n)).toBeGreaterThan(0);
    }

    const gatewayReady = await fetch(`${gatewayOpsUrl}/readyz`);
    expect(gatewayReady.status).toBe(200);
    const graphReady = await fetch(`${graphUrl}/readyz`);
    expect(graphReady.status).toBe(200);
    expect(((await graphReady.json()) as { checks: { graph: { vectors: boolean } } }).checks.graph.vectors).toBe(vectorsExpected);
  });

  it('turns /readyz unready when a privilege is revoked at run time, and ready again once the migrations re-grant it', async () => {
    await asSuperuser(install.name, async (c) => {
      await c.query(`REVOKE INSERT ON gateway.api_keys FROM ${install.app}`);
      await c.query(`REVOKE USAGE ON SCHEMA graph FROM ${install.app}`);
    });
    const gw = await fetch(`${gatewayOpsUrl}/readyz`);
    expect(gw.status).toBe(503);
    const gwBody = (await gw.json()) as { checks: { database: { ok: boolean; problems: string[] } } };
    expect(gwBody.checks.database.ok).toBe(false);
    expect(gwBody.checks.database.problems).toEqual([`the application role "${install.app}" lacks INSERT on gateway.api_keys`]);
    const gr = await fetch(`${graphUrl}/readyz`);
    expect(gr.status).toBe(503);
    const grBody = (await gr.json()) as { checks: { graph: { ok: boolean; problems: string[] } } };
    expect(grBody.checks.graph.problems).toContain(`the application role "${install.app}" lacks USAGE on schema graph`);

    const again = await migrate(install);
    expect(again.code).toBe(0);
    expect((await fetch(`${gatewayOpsUrl}/readyz`)).status).toBe(200);
    expect((await fetch(`${graphUrl}/readyz`)).status).toBe(200);
  });
});

describe('a process whose application role lacks what it needs refuses to start', () => {
  let install: Install;
  let stranger: string;
  let strangerUrl: string;

  beforeAll(async () => {
    install = await prepareInstall('refuse');
    const m = await migrate(install);
    if (m.code !== 0) throw new Error(`migrations failed:\n${m.output}`);
    // A second login role with CONNECT but no grants: the migrations ran for another application role.
    stranger = `${install.app}_x`;
    await asSuperuser('postgres', async (c) => {
      await c.query(`CREATE ROLE ${stranger} LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD 'stranger'`);
      await c.query(`GRANT CONNECT ON DATABASE ${install.name} TO ${stranger}`);
    });
    strangerUrl = pgUrl(stranger, 'stranger', install.name);
  });

  afterAll(async () => {
    await install?.drop();
    await asSuperuser('postgres', (c) => c.query(`DROP ROLE IF EXISTS ${stranger}`));
  });

  const gatewayEnv = (databaseUrl: string) => ({
    LOG_LEVEL: 'warn',
    LORE_DATABASE_URL: databaseUrl,
    GATEWAY_RUN_MIGRATIONS: 'false',
    LORE_REDIS_URL: requireEnv('LORE_TEST_REDIS_URL'),
    LORE_IDENTITY_SECRET: IDENTITY_SECRET,
    GATEWAY_SESSION_SECRET: SESSION_SECRET,
    GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
    LORE_ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: '0',
    GATEWAY_ADMIN_HOST: '127.0.0.1',
    GATEWAY_ADMIN_PORT: '0',
    GATEWAY_OPS_PORT: '0',
  });

  it('the gateway, without USAGE on its schemas: exit 1 naming the role and each missing privilege', async () => {
    const r = await runProcess('services/gateway/dist/main.js', gatewayEnv(strangerUrl));
    expect(r.code).toBe(1);
    expect(r.output).toContain('invalid configuration:');
    expect(r.output).toContain(`LORE_DATABASE_URL: the application role "${stranger}" lacks USAGE on schema gateway`);
    expect(r.output).toContain(`LORE_DATABASE_URL: the application role "${stranger}" lacks USAGE on schema runtime`);
    expect(r.output).toContain(`lacks SELECT, INSERT, UPDATE, DELETE on gateway.api_keys`);
  });

  it('the gateway, with a superuser as its application role: exit 1, row-level security would not bind it', async () => {
    const r = await runProcess('services/gateway/dist/main.js', gatewayEnv(install.ownerUrl));
    expect(r.code).toBe(1);
    expect(r.output).toContain(`LORE_DATABASE_URL: the application role "${install.owner}" is a superuser: row-level security does not bind it`);
  });

  it('the migrations Job, given a superuser as the application role or the owner twice: exit 1 before any deployment rolls', async () => {
    const superuser = new URL(requireEnv('LORE_TEST_PG_URL'));
    superuser.pathname = `/${install.name}`;
    const asSuper = await migrate({ ...install, appUrl: superuser.toString() });
    expect(asSuper.code).toBe(1);
    expect(asSuper.output).toContain(`the application role of LORE_DATABASE_URL cannot run Lore:\n  - the application role "${superuser.username}" is a superuser`);
    const twice = await migrate({ ...install, appUrl: install.ownerUrl });
    expect(twice.code).toBe(1);
    expect(twice.output).toContain(`LORE_DATABASE_URL and LORE_DATABASE_OWNER_URL both log in as "${install.owner}"`);
  });

  it('the gateway and the graph API, on a schema a newer release migrated (helm rollback): exit 1, fatal NewerSchemaError, nothing written', async () => {
    // What a rollback leaves: the newer release's Job recorded a migration this version does not have.
    const record = (sql: string) => asSuperuser(install.name, (c) => c.query(sql));
    await record(`INSERT INTO gateway.schema_migrations (version) VALUES ('9999_newer.sql'); INSERT INTO graph.schema_migrations (version) VALUES ('9999_newer.sql')`);
    try {
      const gw = await runProcess('services/gateway/dist/main.js', gatewayEnv(install.appUrl));
      expect(gw.code).toBe(1);
      expect(gw.output).toContain('fatal: NewerSchemaError: the gateway schema was migrated by a newer version of Lore (9999_newer.sql is not a migration of this version)');
      const graphApi = await runProcess('services/graph/dist/main.js', {
        LORE_LOG_LEVEL: 'warn',
        LORE_DATABASE_URL: install.appUrl,
        LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
        LORE_IDENTITY_SECRET: IDENTITY_SECRET,
        LORE_GRAPH_HOST: '127.0.0.1',
        LORE_GRAPH_PORT: '0',
        LORE_EMBEDDER: 'hashed',
      });
      expect(graphApi.code).toBe(1);
      expect(graphApi.output).toContain('fatal: NewerSchemaError: the graph schema was migrated by a newer version of Lore');
      const versions = await asSuperuser(install.name, (c) => c.query(`SELECT version FROM gateway.schema_migrations WHERE version LIKE '9999%' UNION ALL SELECT version FROM graph.schema_migrations WHERE version LIKE '9999%'`));
      expect(versions.rows).toHaveLength(2);
    } finally {
      await record(`DELETE FROM gateway.schema_migrations WHERE version = '9999_newer.sql'; DELETE FROM graph.schema_migrations WHERE version = '9999_newer.sql'`);
    }
  });

  it('the webhooks worker, without USAGE on its schemas: exit 1 naming the role', async () => {
    const r = await runProcess('services/gateway/dist/webhooks-main.js', {
      LOG_LEVEL: 'warn',
      LORE_DATABASE_URL: strangerUrl,
      LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
      LORE_ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
      WEBHOOKS_OPS_HOST: '127.0.0.1',
      WEBHOOKS_OPS_PORT: '0',
    });
    expect(r.code).toBe(1);
    expect(r.output).toContain(`LORE_DATABASE_URL: the application role "${stranger}" lacks USAGE on schema gateway`);
  });

  it('the graph API, without USAGE on its schemas: exit 1 naming the role', async () => {
    const r = await runProcess('services/graph/dist/main.js', {
      LORE_LOG_LEVEL: 'warn',
      LORE_DATABASE_URL: strangerUrl,
      LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
      LORE_IDENTITY_SECRET: IDENTITY_SECRET,
      LORE_GRAPH_HOST: '127.0.0.1',
      LORE_GRAPH_PORT: '0',
      LORE_EMBEDDER: 'hashed',
    });
    expect(r.code).toBe(1);
    expect(r.output).toContain(`LORE_DATABASE_URL: the application role "${stranger}" lacks USAGE on schema graph`);
  });
});

describe('pgvector placement', () => {
  it('moves an extension an earlier migration left in schema graph to public, keeping the embeddings', async () => {
    if (!vectorsExpected) {
      expect(process.env.LORE_TEST_PG_VECTOR).not.toBe('1');
      return;
    }
    const install = await prepareInstall('vecmove');
    try {
      // What installs migrated before the fix have: vector created with search_path graph, public.
      await asSuperuser(install.name, async (c) => {
        await c.query(`CREATE SCHEMA graph AUTHORIZATION ${install.owner}`);
        await c.query(`SET ROLE ${install.owner}`);
        await c.query(`SET search_path TO graph, public`);
        await c.query(`CREATE EXTENSION vector`);
      });
      const m = await migrate(install);
      expect(m.output).not.toContain('migrations failed');
      expect(m.code).toBe(0);
      const app = new Client({ connectionString: install.appUrl });
      await app.connect();
      try {
        const r = await app.query<{ schema: string; d: number }>(
          `SELECT (SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector') AS schema, ('[1,0]'::vector <=> '[1,0]'::vector)::float8 AS d`,
        );
        expect(r.rows[0]).toEqual({ schema: 'public', d: 0 });
        const col = await app.query<{ type: string }>(
          `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = 'graph.chunks'::regclass AND attname = 'embedding'`,
        );
        expect(col.rows).toEqual([{ type: 'vector' }]);
      } finally {
        await app.end();
      }
    } finally {
      await install.drop();
    }
  });

  it('with an owner that may not create pgvector, runs lexical-only until a superuser creates it in public and the migrations run again', async () => {
    if (!vectorsExpected) {
      expect(process.env.LORE_TEST_PG_VECTOR).not.toBe('1');
      return;
    }
    const install = await prepareInstall('vecafter', 'NOSUPERUSER');
    const bus = new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), clientId: 'roles-vec-after', logger });
    const start = async () => {
      const db = await new PostgresDb({ url: install.appUrl }).init();
      try {
        const g = await createGraphService({
          db,
          bus,
          blobs: new PostgresBlobStore(db),
          logger,
          metrics: createMetricsRegistry('roles-vec-after', { defaultMetrics: false }),
          signer: new IdentitySigner(IDENTITY_SECRET),
          ocr: null,
          migrate: false,
        });
        await g.close();
        return g.describe();
      } finally {
        await db.close();
      }
    };
    try {
      const first = await migrate(install);
      expect(first.output).not.toContain('migrations failed');
      expect(first.code).toBe(0);
      expect(await start()).toMatchObject({ vectors: false, retrieval: 'lexical' });

      await asSuperuser(install.name, (c) => c.query(`CREATE EXTENSION vector SCHEMA public`));
      const second = await migrate(install);
      expect(second.code).toBe(0);
      expect(await start()).toMatchObject({ vectors: true, retrieval: 'hybrid' });
    } finally {
      await bus.close();
      await install.drop();
    }
  });

  it('the graph refuses to start when pgvector sits where the application role cannot resolve it', async () => {
    if (!vectorsExpected) {
      expect(process.env.LORE_TEST_PG_VECTOR).not.toBe('1');
      return;
    }
    const install = await prepareInstall('vecelse');
    let db: PostgresDb | undefined;
    const bus = new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), clientId: 'roles-vec', logger });
    try {
      // A database administrator created it in a schema of their own that the application role cannot use.
      await asSuperuser(install.name, async (c) => {
        await c.query(`CREATE SCHEMA extensions`);
        await c.query(`CREATE EXTENSION vector SCHEMA extensions`);
      });
      const m = await migrate(install);
      expect(m.code).toBe(0);
      db = await new PostgresDb({ url: install.appUrl }).init();
      expect(db.hasVector).toBe(false);
      const started = createGraphService({
        db,
        bus,
        blobs: new PostgresBlobStore(db),
        logger,
        metrics: createMetricsRegistry('roles-vec', { defaultMetrics: false }),
        signer: new IdentitySigner(IDENTITY_SECRET),
        ocr: null,
        migrate: false,
      });
      await expect(started).rejects.toBeInstanceOf(ConfigError);
      await expect(started).rejects.toThrow(/LORE_DATABASE_URL: pgvector is installed in schema extensions, but the application role cannot use it/);
    } finally {
      await bus.close();
      await db?.close();
      await install.drop();
    }
  });
});
