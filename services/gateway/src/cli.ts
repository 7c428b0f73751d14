import { parseArgs } from 'node:util';
import { z } from 'zod';
import { IdentitySigner, PostgresDb, createLogger, createMetricsRegistry, generateEncryptionKey, parseConfig, parseEncryptionKeys, ConfigError } from '@lore/runtime';
import { buildContext } from './context';
import { gatewayConfig, DEFAULT_PLANS } from './config';
import { migrateGateway } from './gateway';
import { MemoryGatewayState } from './state/memory-state';
import { createTenant } from './application/tenancy';
import { createKey } from './application/keys';
import { createUser } from './application/identity';
import { randomBase62 } from './domain/credentials';

const USAGE = `Create a tenant and its first API key in a Lore deployment's database.

  npx tsx services/gateway/src/cli.ts create-tenant --name "Acme" [options]

Options:
  --tenant-id ID        tenant id (default: generated); an existing tenant is reused
  --name NAME           tenant display name (required)
  --plan PLAN           plan name (default: unlimited)
  --key-type TYPE       live | test (default: live)
  --key-name NAME       name of the first key (default: "first key")
  --admin-email EMAIL   also create an administrator who can sign in to the portal
  --migrate             apply the gateway's migrations first (needs LORE_DATABASE_OWNER_URL)

Environment:
  LORE_DATABASE_URL        application role connection string (required)
  LORE_DATABASE_OWNER_URL  schema owner connection string (for --migrate)

The key (and the administrator's password) is printed once and stored only as a hash.`;

const envSchema = z.object({
  LORE_DATABASE_URL: z.string({ error: 'is required' }).min(1),
  LORE_DATABASE_OWNER_URL: z.string().optional(),
});

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'tenant-id': { type: 'string' },
      name: { type: 'string' },
      plan: { type: 'string', default: 'unlimited' },
      'key-type': { type: 'string', default: 'live' },
      'key-name': { type: 'string', default: 'first key' },
      'admin-email': { type: 'string' },
      migrate: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help || positionals[0] !== 'create-tenant' || !values.name) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  const keyType = values['key-type'];
  if (keyType !== 'live' && keyType !== 'test') {
    process.stderr.write('--key-type must be live or test\n');
    return 2;
  }
  const env = parseConfig(envSchema, process.env);
  if (values.migrate && !env.LORE_DATABASE_OWNER_URL) {
    process.stderr.write('--migrate needs LORE_DATABASE_OWNER_URL\n');
    return 2;
  }
  const db = await new PostgresDb({ url: env.LORE_DATABASE_URL, ownerUrl: env.LORE_DATABASE_OWNER_URL, maxConnections: 2 }).init();
  try {
    if (values.migrate) await migrateGateway(db);
    // Creating rows touches neither Redis, the identity signer nor sealed secrets (no webhook is created here): the
    // in-process state, a random signer and a throw-away key ring stand in for them.
    const context = buildContext({
      db,
      state: new MemoryGatewayState(),
      logger: createLogger({ level: 'warn', service: 'gateway-cli' }),
      metrics: createMetricsRegistry('gateway-cli', { defaultMetrics: false }),
      signer: new IdentitySigner(randomBase62(40)),
      config: gatewayConfig({ sessions: { secret: randomBase62(40) }, encryptionKeys: parseEncryptionKeys(generateEncryptionKey('cli')), plans: { ...DEFAULT_PLANS, [values.plan!]: DEFAULT_PLANS[values.plan!] ?? {} }, defaultPlan: values.plan! }),
    });
    const { tenant, created } = await createTenant(context, { tenant_id: values['tenant-id'], name: values.name, plan: values.plan });
    const { record, plaintext } = await createKey(context, tenant.tenant_id, { type: keyType, name: values['key-name']! }, 'cli');
    const out: Record<string, unknown> = {
      tenant_id: tenant.tenant_id,
      tenant_created: created,
      workspace_id: tenant.default_workspace_id,
      key_id: record.key_id,
      api_key: plaintext,
    };
    if (values['admin-email']) {
      const password = randomBase62(20);
      const user = await createUser(context, tenant.tenant_id, { email: values['admin-email'], password, role: 'admin' });
      out.admin = { user_id: user.user_id, email: user.email, password };
    }
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    process.stderr.write('The key and password above are shown once; store them now.\n');
    return 0;
  } finally {
    await db.close();
  }
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof ConfigError ? err.message : err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
