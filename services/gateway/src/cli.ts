import { parseArgs } from 'node:util';
import { z } from 'zod';
import { AdminCreatedKeySchema, AdminTenantSchema, AdminUserSchema } from '@lore/contracts';
import {
  IdentitySigner,
  KafkaBus,
  PostgresDb,
  createLogger,
  createMetricsRegistry,
  envKafkaPrefix,
  generateEncryptionKey,
  listDeadLetters,
  parseConfig,
  parseEncryptionKeys,
  redriveDeadLetters,
  viewOf,
  ConfigError,
} from '@lore/runtime';
import { buildContext } from './context';
import { gatewayConfig, DEFAULT_PLANS } from './config';
import { migrateGateway } from './gateway';
import { MemoryGatewayState } from './state/memory-state';
import { createTenant } from './application/tenancy';
import { createKey } from './application/keys';
import { createUser } from './application/identity';
import { randomBase62 } from './domain/credentials';

const USAGE = `Create a tenant and its first API key in a Lore deployment.

  npx tsx --conditions=lore-src services/gateway/src/cli.ts create-tenant --name "Acme" [options]

It reaches the deployment one of two ways:
  its internal admin API   --admin-url URL (or LORE_ADMIN_URL) and LORE_ADMIN_TOKEN; in embedded mode
                           (npm start) that is http://127.0.0.1:9081 and the admin_token of .lore/dev-credentials.json
  its database             LORE_DATABASE_URL (and LORE_DATABASE_OWNER_URL for --migrate)

Options:
  --tenant-id ID        tenant id (default: generated); an existing tenant is reused
  --name NAME           tenant display name (required)
  --plan PLAN           plan name (default: the deployment's default plan; unlimited through the database)
  --key-type TYPE       live | test (default: live)
  --key-name NAME       name of the first key (default: "first key")
  --admin-email EMAIL   also create an administrator who can sign in to the portal
  --admin-url URL       the internal admin API's base URL (overrides LORE_ADMIN_URL)
  --migrate             apply the gateway's migrations first (database only; needs LORE_DATABASE_OWNER_URL)

Environment:
  LORE_ADMIN_URL           internal admin API base URL
  LORE_ADMIN_TOKEN         the admin API's bearer token (never pass it as an argument: arguments are visible to
                           every user of the machine)
  LORE_DATABASE_URL        application role connection string
  LORE_DATABASE_OWNER_URL  schema owner connection string (for --migrate)

It prints JSON with tenant_id, tenant_created, workspace_id, key_id, api_key (and admin: user_id, email,
password). The key and the password are shown once and stored only as hashes.

Dead letters (messages a consumer gave up on; docs/runtime.md, "Poison messages"):

  cli.ts dead-letters list [--topic TOPIC] [--group GROUP] [--limit N]
  cli.ts dead-letters redrive --id PARTITION:OFFSET [--id ...]

  list prints one JSON object per line: id, the original topic, partition, offset, key, group, error, attempts,
  first and last failure time, event_id, headers and value. redrive publishes those ids back to their original
  topics. Both need LORE_KAFKA_BROKERS and the install's LORE_KAFKA_PREFIX.`;

const DEAD_LETTER_OPTIONS = {
  topic: { type: 'string' },
  group: { type: 'string' },
  limit: { type: 'string', default: '1000' },
  id: { type: 'string', multiple: true },
} as const;

const kafkaEnvSchema = z.object({
  LORE_KAFKA_BROKERS: z
    .string({ error: 'is required' })
    .min(1)
    .transform((v) => v.split(',').map((b) => b.trim()).filter(Boolean)),
  LORE_KAFKA_PREFIX: envKafkaPrefix(),
});

/** `dead-letters list|redrive`: straight to the install's Kafka topics, as the consumers see them. */
async function deadLetters(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: DEAD_LETTER_OPTIONS });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  const action = positionals[0];
  if (action !== 'list' && action !== 'redrive') throw new UsageError('dead-letters takes list or redrive; see --help');
  const limit = Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive integer');
  const ids = values.id ?? [];
  if (action === 'redrive' && ids.length === 0) throw new UsageError('redrive needs at least one --id PARTITION:OFFSET');
  if (ids.some((id) => !/^\d+:\d+$/.test(id))) throw new UsageError('an --id is PARTITION:OFFSET, as list prints it');
  const env = parseConfig(kafkaEnvSchema, process.env);
  const bus = new KafkaBus({
    brokers: env.LORE_KAFKA_BROKERS,
    prefix: env.LORE_KAFKA_PREFIX,
    clientId: 'lore-cli',
    // Logs go to stderr: stdout is the listing.
    logger: createLogger({ level: 'error', service: 'gateway-cli', destination: process.stderr }),
  });
  try {
    if (action === 'list') {
      for (const d of await listDeadLetters(bus, { topic: values.topic, group: values.group, limit })) process.stdout.write(`${JSON.stringify(viewOf(d))}\n`);
    } else {
      const done = await redriveDeadLetters(bus, ids);
      process.stdout.write(`${JSON.stringify({ redriven: done.map((d) => ({ id: d.id, topic: d.topic, key: d.key })) })}\n`);
    }
  } finally {
    await bus.close();
  }
  return 0;
}

const unsetIfEmpty = z
  .string()
  .optional()
  .transform((v) => (v ? v : undefined));

const envSchema = z.object({
  LORE_ADMIN_URL: unsetIfEmpty,
  LORE_ADMIN_TOKEN: unsetIfEmpty,
  LORE_DATABASE_URL: unsetIfEmpty,
  LORE_DATABASE_OWNER_URL: unsetIfEmpty,
});

interface CreateTenantRequest {
  tenantId: string | undefined;
  name: string;
  plan: string | undefined;
  keyType: 'live' | 'test';
  keyName: string;
  adminEmail: string | undefined;
}

type Output = Record<string, unknown>;

/** A usage mistake: printed with exit status 2, like a bad argument. */
class UsageError extends Error {}

const OPTIONS = {
  'tenant-id': { type: 'string' },
  name: { type: 'string' },
  plan: { type: 'string' },
  'key-type': { type: 'string', default: 'live' },
  'key-name': { type: 'string', default: 'first key' },
  'admin-email': { type: 'string' },
  'admin-url': { type: 'string' },
  migrate: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} as const;

function parseArguments(argv: string[]) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (err) {
    // An unknown option or a missing value: a usage mistake, said in node's own words.
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

async function run(argv: string[]): Promise<number> {
  if (argv[0] === 'dead-letters' && !argv.includes('--help')) return deadLetters(argv.slice(1));
  const { values, positionals } = parseArguments(argv);
  if (values.help || positionals[0] !== 'create-tenant' || !values.name) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  const keyType = values['key-type'];
  if (keyType !== 'live' && keyType !== 'test') throw new UsageError('--key-type must be live or test');
  const request: CreateTenantRequest = {
    tenantId: values['tenant-id'],
    name: values.name,
    plan: values.plan,
    keyType,
    keyName: values['key-name']!,
    adminEmail: values['admin-email'],
  };
  const env = parseConfig(envSchema, process.env);
  const adminUrl = values['admin-url'] ?? env.LORE_ADMIN_URL;
  if (adminUrl && env.LORE_DATABASE_URL) {
    throw new UsageError('both an admin API URL and LORE_DATABASE_URL are set: choose one way to reach the deployment');
  }
  let out: Output;
  if (adminUrl) {
    if (values.migrate) throw new UsageError('--migrate works only through the database (LORE_DATABASE_URL); the admin API\'s server migrates itself');
    if (!env.LORE_ADMIN_TOKEN) throw new UsageError('the admin API needs LORE_ADMIN_TOKEN');
    out = await throughAdminApi(parseAdminUrl(adminUrl), env.LORE_ADMIN_TOKEN, request);
  } else if (env.LORE_DATABASE_URL) {
    if (values.migrate && !env.LORE_DATABASE_OWNER_URL) throw new UsageError('--migrate needs LORE_DATABASE_OWNER_URL');
    out = await throughDatabase({ url: env.LORE_DATABASE_URL, ownerUrl: env.LORE_DATABASE_OWNER_URL, migrate: values.migrate! }, request);
  } else {
    throw new UsageError('set LORE_ADMIN_URL (or --admin-url) with LORE_ADMIN_TOKEN, or LORE_DATABASE_URL; see --help');
  }
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  // A password is printed only when an administrator was made (and only a new one's); the key always.
  const withPassword = typeof (out.admin as { password?: unknown } | undefined)?.password === 'string';
  process.stderr.write(withPassword ? 'The key and password above are shown once; store them now.\n' : 'The key above is shown once; store it now.\n');
  return 0;
}

async function throughDatabase(conn: { url: string; ownerUrl: string | undefined; migrate: boolean }, req: CreateTenantRequest): Promise<Output> {
  const plan = req.plan ?? 'unlimited';
  const db = await new PostgresDb({ url: conn.url, ownerUrl: conn.ownerUrl, maxConnections: 2 }).init();
  try {
    if (conn.migrate) await migrateGateway(db);
    // Creating rows touches neither Redis, the identity signer nor sealed secrets (no webhook is created here): the
    // in-process state, a random signer and a throw-away key ring stand in for them.
    const context = buildContext({
      db,
      state: new MemoryGatewayState(),
      logger: createLogger({ level: 'warn', service: 'gateway-cli' }),
      metrics: createMetricsRegistry('gateway-cli', { defaultMetrics: false }),
      signer: new IdentitySigner(randomBase62(40)),
      config: gatewayConfig({ sessions: { secret: randomBase62(40) }, encryptionKeys: parseEncryptionKeys(generateEncryptionKey('cli')), plans: { ...DEFAULT_PLANS, [plan]: DEFAULT_PLANS[plan] ?? {} }, defaultPlan: plan }),
    });
    const { tenant, created } = await createTenant(context, { tenant_id: req.tenantId, name: req.name, plan });
    const { record, plaintext } = await createKey(context, tenant.tenant_id, { type: req.keyType, name: req.keyName }, 'cli');
    const out: Output = {
      tenant_id: tenant.tenant_id,
      tenant_created: created,
      workspace_id: tenant.default_workspace_id,
      key_id: record.key_id,
      api_key: plaintext,
    };
    if (req.adminEmail) {
      const password = randomBase62(20);
      const user = await createUser(context, tenant.tenant_id, { email: req.adminEmail, password, role: 'admin' });
      out.admin = { user_id: user.user_id, email: user.email, password };
    }
    return out;
  } finally {
    await db.close();
  }
}

function parseAdminUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`the admin API URL is not a URL: ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('the admin API URL must start with http:// or https://');
  if (url.username || url.password || url.search || url.hash) throw new UsageError('the admin API URL takes no user, password, query or fragment (the token goes in LORE_ADMIN_TOKEN)');
  return url.href.replace(/\/+$/, '');
}

/** The admin API answers a few hundred bytes; anything much larger is not it. */
const MAX_ANSWER_BYTES = 64 * 1024;
const CALL_TIMEOUT_MS = 30_000;

async function throughAdminApi(baseUrl: string, token: string, req: CreateTenantRequest): Promise<Output> {
  const call = async <S extends z.ZodType>(path: string, body: Record<string, unknown>, expected: number[], answer: S): Promise<{ status: number; json: z.output<S> }> => {
    let res: Response;
    try {
      res = await fetch(`${baseUrl}/internal/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        redirect: 'error',
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err instanceof Error ? err.message : String(err));
      throw new Error(`cannot reach the admin API at ${baseUrl} (${cause}); is Lore running, and is this its admin port?`);
    }
    const text = await readBounded(res);
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // Reported below with the status.
    }
    if (!expected.includes(res.status) || !json || typeof json !== 'object') {
      const message = (json as { error?: { message?: unknown } } | null)?.error?.message;
      throw new Error(`the admin API answered ${res.status} to POST ${path}${typeof message === 'string' ? `: ${message}` : ''}`);
    }
    const parsed = answer.safeParse(json);
    if (!parsed.success) throw new Error(`the admin API's answer to POST ${path} is not what this CLI expects (a different Lore version?)`);
    return { status: res.status, json: parsed.data };
  };
  const { status: tenantStatus, json: tenant } = await call('/tenants', { name: req.name, ...(req.tenantId ? { tenant_id: req.tenantId } : {}), ...(req.plan ? { plan: req.plan } : {}) }, [200, 201], AdminTenantSchema);
  const tenantPath = `/tenants/${encodeURIComponent(tenant.tenant_id)}`;
  const { json: key } = await call(`${tenantPath}/keys`, { type: req.keyType, name: req.keyName }, [201], AdminCreatedKeySchema);
  const out: Output = {
    tenant_id: tenant.tenant_id,
    tenant_created: tenantStatus === 201,
    workspace_id: tenant.default_workspace_id,
    key_id: key.key_id,
    api_key: key.key,
  };
  if (req.adminEmail) {
    const password = randomBase62(20);
    const { json: user } = await call(`${tenantPath}/users`, { email: req.adminEmail, password, role: 'admin' }, [201], AdminUserSchema);
    out.admin = { user_id: user.user_id, email: user.email, password };
  }
  return out;
}

async function readBounded(res: Response): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_ANSWER_BYTES) {
      await res.body.cancel().catch(() => undefined);
      throw new Error(`the admin API's answer exceeds ${MAX_ANSWER_BYTES} bytes; is this its admin port?`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof ConfigError || err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
