import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/**
 * Integration suites talk to the real PostgreSQL, Redis and Kafka started by `test/infra/up.sh`, whose env file
 * the test command sources. A missing variable fails the suite: an integration test never silently skips.
 */
export function requireEnv(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the suites through the README's test command (it starts the infrastructure)`);
  return v;
}

export interface TestDatabase {
  /** Application role (lore_app, NOBYPASSRLS) connection string. */
  url: string;
  /** Owner connection string (migrations). */
  ownerUrl: string;
  name: string;
  drop(): Promise<void>;
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

/**
 * A fresh, empty database for one suite, prepared as docs/install.md tells an install to: created by the owner
 * role, CONNECT for the application role only, nothing else (no extension). Dropped by `drop()`.
 */
export async function freshDatabase(prefix = 'lore_t'): Promise<TestDatabase> {
  const ownerUrl = requireEnv('LORE_TEST_PG_URL');
  const appUrl = requireEnv('LORE_TEST_PG_APP_URL');
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const admin = new Client({ connectionString: ownerUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const dbOwnerUrl = withDatabase(ownerUrl, name);
  const setup = new Client({ connectionString: dbOwnerUrl });
  await setup.connect();
  try {
    await setup.query(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`);
    await setup.query(`GRANT CONNECT ON DATABASE ${name} TO lore_app`);
    // No extension is created here: the graph's migrations create pgvector (in schema public) exactly as on an
    // install, so a suite sees what an install sees (docs/install.md).
  } finally {
    await setup.end();
  }
  return {
    url: withDatabase(appUrl, name),
    ownerUrl: dbOwnerUrl,
    name,
    async drop() {
      const c = new Client({ connectionString: ownerUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

export function uniqueSuffix(): string {
  return randomBytes(4).toString('hex');
}
