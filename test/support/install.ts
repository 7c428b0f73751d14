import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'pg';
import { requireEnv } from './infra';

/**
 * A cluster-mode install's database, prepared the way docs/install.md ("Step by step") tells a database
 * administrator to, and the chart's migrations script run the way its Job runs it. Shared by the suites that
 * install Lore from scratch (test/e2e/database-roles, test/e2e/cluster-install).
 */

export const REPO_ROOT = join(__dirname, '..', '..');

/** A connection string of the test server for `role` on `database`. */
export function pgUrl(role: string, password: string, database: string): string {
  const u = new URL(requireEnv('LORE_TEST_PG_URL'));
  u.username = role;
  u.password = password;
  u.pathname = `/${database}`;
  return u.toString();
}

/** Runs `fn` connected to `database` as the test server's superuser (`LORE_TEST_PG_URL`). */
export async function asSuperuser<T>(database: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const u = new URL(requireEnv('LORE_TEST_PG_URL'));
  u.pathname = `/${database}`;
  const c = new Client({ connectionString: u.toString() });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * A database prepared as docs/install.md says, with role names of the install's choosing: an owner role that owns
 * the database, and an application role of another name than `lore_app` (login, NOSUPERUSER, NOBYPASSRLS) with
 * CONNECT and nothing else. No extension is created: the migrations do that (when the owner may).
 */
export interface Install {
  name: string;
  owner: string;
  app: string;
  ownerUrl: string;
  appUrl: string;
  drop(): Promise<void>;
}

/**
 * `ownerOptions` are the owner role's attributes: `SUPERUSER` lets the migrations create pgvector themselves;
 * `NOSUPERUSER` is the owner of install.md's SQL as written (`CREATE ROLE … LOGIN PASSWORD …`).
 */
export async function prepareInstall(label: string, ownerOptions = 'SUPERUSER'): Promise<Install> {
  const s = randomBytes(4).toString('hex');
  const name = `lore_${label}_${s}`;
  const owner = `lore_own_${s}`;
  const app = `lore_app_${s}`;
  await asSuperuser('postgres', async (c) => {
    await c.query(`CREATE ROLE ${owner} LOGIN ${ownerOptions} PASSWORD 'owner-${s}'`);
    await c.query(`CREATE ROLE ${app} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD 'app-${s}'`);
    await c.query(`CREATE DATABASE ${name} OWNER ${owner}`);
    await c.query(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`);
    await c.query(`GRANT CONNECT ON DATABASE ${name} TO ${app}`);
  });
  return {
    name,
    owner,
    app,
    ownerUrl: pgUrl(owner, `owner-${s}`, name),
    appUrl: pgUrl(app, `app-${s}`, name),
    async drop() {
      await asSuperuser('postgres', async (c) => {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.query(`DROP ROLE IF EXISTS ${app}`);
        await c.query(`DROP ROLE IF EXISTS ${owner}`);
      });
    },
  };
}

/**
 * Runs a compiled script of the checkout as its own process with exactly `env` (plus `PATH`) and `args`; resolves
 * with its exit code, its standard output alone, and everything it wrote.
 */
export function runProcess(
  script: string,
  env: Record<string, string>,
  options: { args?: string[]; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, script), ...(options.args ?? [])], { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, output });
    });
  });
}

/**
 * The chart's migrations Job script, as install.md runs it by hand from a built checkout: both URLs, and
 * `LORE_APP_DIR` naming the checkout.
 */
export function migrate(install: Pick<Install, 'appUrl' | 'ownerUrl'>) {
  return runProcess('charts/lore/files/migrate.js', {
    LORE_APP_DIR: REPO_ROOT,
    LORE_DATABASE_URL: install.appUrl,
    LORE_DATABASE_OWNER_URL: install.ownerUrl,
    LOG_LEVEL: 'warn',
  });
}
