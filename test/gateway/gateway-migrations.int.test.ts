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

describe('gateway migration 0007: a key\'s lineage along its rotations', () => {
  const T = 'tenant-rotated';
  let earlier: EarlierDatabase;
  let db: PgliteDb;

  beforeAll(async () => {
    earlier = await earlierDatabase({ schema: 'gateway', dir: GATEWAY_MIGRATIONS_DIR }, (f) => f < '0007');
    db = earlier.db;
  });
  afterAll(async () => {
    await earlier?.close();
  });

  it('gives every replacement the first key of its chain, and the authentication lookup answers it', async () => {
    await db.withTenant(T, async (sql) => {
      await sql.query(`INSERT INTO gateway.tenants (tenant_id, name, plan) VALUES ($1, 'Rotated', 'free')`, [T]);
      const key = (id: string, from: string | null, replacedBy: string | null) =>
        sql.query(`INSERT INTO gateway.api_keys (tenant_id, key_id, type, name, key_hash, prefix, rotated_from, replaced_by, created_by) VALUES ($1, $2, 'live', $2, $3, 'ck_live', $4, $5, 'admin')`, [T, id, `hash-${id}`, from, replacedBy]);
      await key('key_a1', null, 'key_a2');
      await key('key_a2', 'key_a1', 'key_a3');
      await key('key_a3', 'key_a2', null);
      await key('key_b', null, null);
    });
    await earlier.upgrade();
    const lineage = async (id: string) => (await db.query<{ lineage_id: string }>(`SELECT lineage_id FROM gateway.auth_key($1)`, [`hash-${id}`])).rows[0]?.lineage_id;
    expect(await lineage('key_a1')).toBe('key_a1');
    expect(await lineage('key_a2')).toBe('key_a1');
    expect(await lineage('key_a3')).toBe('key_a1');
    expect(await lineage('key_b')).toBe('key_b');
    const stored = await db.withTenant(T, async (sql) => (await sql.query<{ key_id: string; lineage_id: string | null }>(`SELECT key_id, lineage_id FROM gateway.api_keys WHERE tenant_id = $1 ORDER BY key_id`, [T])).rows);
    expect(stored).toEqual([
      { key_id: 'key_a1', lineage_id: null },
      { key_id: 'key_a2', lineage_id: 'key_a1' },
      { key_id: 'key_a3', lineage_id: 'key_a1' },
      { key_id: 'key_b', lineage_id: null },
    ]);
  });
});
