import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Client } from 'pg';
import { REPO_ROOT } from '../../operator/test/support/kube';
import { freshDatabase, type TestDatabase } from '../support/infra';

jest.setTimeout(120_000);

function migrate(db: TestDatabase): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'charts', 'lore', 'files', 'migrate.js')], {
      // The script looks for the application where the image keeps it; here, the compiled checkout.
      env: { PATH: process.env.PATH ?? '', LORE_APP_DIR: REPO_ROOT, LORE_DATABASE_URL: db.url, LORE_DATABASE_OWNER_URL: db.ownerUrl, LOG_LEVEL: 'info' },
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** The chart's migrations Job script, run as the Job runs it, against a fresh PostgreSQL database. */
describe('chart migrations script', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await freshDatabase('lore_mig');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('migrates every service schema as the owner, then is a no-op on the next run', async () => {
    const first = await migrate(db);
    expect(first.output).not.toContain('migrations failed');
    expect(first.code).toBe(0);
    const c = new Client({ connectionString: db.ownerUrl });
    await c.connect();
    try {
      const schemas = (await c.query(`SELECT schema_name FROM information_schema.schemata WHERE schema_name IN ('runtime', 'gateway', 'graph', 'core', 'agents') ORDER BY 1`)).rows.map((r) => r.schema_name);
      // core's and agents' schemas too: their deployments never migrate (LORE_CORE_MIGRATE=false,
      // LORE_AGENTS_MIGRATE=false), the Job does it for them.
      expect(schemas).toEqual(['agents', 'core', 'gateway', 'graph', 'runtime']);
      for (const s of schemas) {
        const n = (await c.query(`SELECT count(*)::int AS n FROM ${s}.schema_migrations`)).rows[0].n;
        expect(n).toBeGreaterThan(0);
      }
    } finally {
      await c.end();
    }
    const logs = first.output.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(logs.filter((l) => l.msg === 'migrations applied').map((l) => l.schema).sort()).toEqual(['agents', 'core', 'gateway', 'graph', 'runtime']);

    const second = await migrate(db);
    expect(second.code).toBe(0);
    const again = second.output.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(again.every((l) => l.msg === 'schema up to date')).toBe(true);
  });

  it('refuses a schema a newer release migrated, exiting 1 before it applies anything (what stops a helm rollback to this release)', async () => {
    const c = new Client({ connectionString: db.ownerUrl });
    await c.connect();
    try {
      await c.query(`INSERT INTO graph.schema_migrations (version) VALUES ('9999_newer.sql')`);
      const before = (await c.query(`SELECT count(*)::int AS n FROM graph.schema_migrations`)).rows[0].n;
      const r = await migrate(db);
      expect(r.code).toBe(1);
      expect(r.output).toContain('NewerSchemaError: the graph schema was migrated by a newer version of Lore (9999_newer.sql is not a migration of this version)');
      expect((await c.query(`SELECT count(*)::int AS n FROM graph.schema_migrations`)).rows[0].n).toBe(before);
      // The application role reads the record (each process's start-up check), and cannot write it.
      const app = new Client({ connectionString: db.url });
      await app.connect();
      try {
        expect((await app.query(`SELECT version FROM graph.schema_migrations WHERE version = '9999_newer.sql'`)).rows).toHaveLength(1);
        await expect(app.query(`DELETE FROM graph.schema_migrations`)).rejects.toThrow(/permission denied/);
      } finally {
        await app.end();
      }
    } finally {
      await c.query(`DELETE FROM graph.schema_migrations WHERE version = '9999_newer.sql'`);
      await c.end();
    }
  });

  it('fails loudly without the owner URL', async () => {
    const r = await migrate({ ...db, ownerUrl: '' });
    expect(r.code).toBe(1);
    expect(r.output).toContain('LORE_DATABASE_OWNER_URL');
  });
});
