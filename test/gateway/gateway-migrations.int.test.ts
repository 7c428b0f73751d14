import { GATEWAY_MIGRATIONS_DIR } from '@lore/gateway';
import type { PgliteDb } from '@lore/runtime';
import { earlierDatabase, type EarlierDatabase } from '../support/migrations';

jest.setTimeout(120_000);

/**
 * Gateway migrations over data written before them (embedded mode's database, as an upgraded data directory holds
 * it): 0006 gives an OAuth client of one project its project's workspace.
 */
describe('gateway migration 0006: an OAuth client of one project in its project\'s workspace', () => {
  const T = 'tenant-upgraded';
  let earlier: EarlierDatabase;
  let db: PgliteDb;

  beforeAll(async () => {
    earlier = await earlierDatabase({ schema: 'gateway', dir: GATEWAY_MIGRATIONS_DIR }, (f) => f !== '0006_oauth_client_project_workspace.sql');
    db = earlier.db;
  });
  afterAll(async () => {
    await earlier?.close();
  });

  it('pins a project\'s client to the project\'s workspace, and leaves the others as they were', async () => {
    await db.withTenant(T, async (sql) => {
      await sql.query(`INSERT INTO gateway.tenants (tenant_id, name, plan) VALUES ($1, 'Upgraded', 'free')`, [T]);
      for (const ws of ['ws_a', 'ws_b']) await sql.query(`INSERT INTO gateway.workspaces (tenant_id, workspace_id, name, slug) VALUES ($1, $2, $2, $2)`, [T, ws]);
      await sql.query(`INSERT INTO gateway.projects (tenant_id, project_id, workspace_id, name, slug) VALUES ($1, 'prj_b', 'ws_b', 'B', 'b')`, [T]);
      const client = (id: string, workspace: string | null, project: string | null) =>
        sql.query(`INSERT INTO gateway.oauth_clients (tenant_id, client_id, name, secret_hash, scopes, workspace_id, project_id, created_by) VALUES ($1, $2, $2, 'h', '{}', $3, $4, 'usr')`, [T, id, workspace, project]);
      await client('oc_none', null, 'prj_b');
      await client('oc_other', 'ws_a', 'prj_b');
      await client('oc_tenant', null, null);
      await client('oc_workspace', 'ws_a', null);
    });
    await earlier.upgrade();
    const rows = await db.withTenant(T, async (sql) => (await sql.query<{ client_id: string; workspace_id: string | null }>(`SELECT client_id, workspace_id FROM gateway.oauth_clients WHERE tenant_id = $1 ORDER BY client_id`, [T])).rows);
    expect(rows).toEqual([
      { client_id: 'oc_none', workspace_id: 'ws_b' },
      { client_id: 'oc_other', workspace_id: 'ws_b' },
      { client_id: 'oc_tenant', workspace_id: null },
      { client_id: 'oc_workspace', workspace_id: 'ws_a' },
    ]);
  });
});
