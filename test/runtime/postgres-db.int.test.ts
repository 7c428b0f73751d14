import { Client } from 'pg';
import { describeDbContract } from '../../services/runtime/src/db/db.contract';
import { freshPostgresDb } from './support';

jest.setTimeout(120_000);

describeDbContract('PostgresDb on a real PostgreSQL server', async () => {
  const { db, close } = await freshPostgresDb();
  return { db, ownerRole: 'lore_owner', close };
});

describe('PostgresDb on a real server', () => {
  it('reports no pgvector on a fresh database: the migrations create it, not the harness', async () => {
    const { db, close } = await freshPostgresDb();
    try {
      expect(db.hasVector).toBe(false);
    } finally {
      await close();
    }
  });

  it('logs the application role in without superuser, BYPASSRLS or membership in the owner role', async () => {
    const { database, close } = await freshPostgresDb();
    const c = new Client({ connectionString: database.url });
    await c.connect();
    try {
      const r = await c.query(
        `SELECT rolsuper, rolbypassrls, pg_has_role(current_user, 'lore_owner', 'MEMBER') AS in_owner FROM pg_roles WHERE rolname = current_user`,
      );
      expect(r.rows[0]).toEqual({ rolsuper: false, rolbypassrls: false, in_owner: false });
    } finally {
      await c.end();
      await close();
    }
  });
});
