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

describe('gateway migration 0008: what an older gateway writes on the migrated schema is filled in', () => {
  const T = 'tenant-rolling';
  let earlier: EarlierDatabase;
  let db: PgliteDb;

  beforeAll(async () => {
    earlier = await earlierDatabase({ schema: 'gateway', dir: GATEWAY_MIGRATIONS_DIR }, (f) => f !== '0008_fill_what_older_gateways_leave_out.sql');
    db = earlier.db;
  });
  afterAll(async () => {
    await earlier?.close();
  });

  /** A key inserted as the gateway before 0007 did: no lineage (the previous release's pods during a rolling update). */
  const oldKey = (id: string, from: string | null) =>
    db.withTenant(T, (sql) =>
      sql.query(`INSERT INTO gateway.api_keys (tenant_id, key_id, type, name, key_hash, prefix, rotated_from, created_by) VALUES ($1, $2, 'live', $2, $3, 'ck_live', $4, 'admin')`, [T, id, `hash-${id}`, from]),
    );
  /** An OAuth client inserted as the gateway before 0006 did: the workspace it was given, or none. */
  const oldClient = (id: string, workspace: string | null, project: string | null) =>
    db.withTenant(T, (sql) =>
      sql.query(`INSERT INTO gateway.oauth_clients (tenant_id, client_id, name, secret_hash, scopes, workspace_id, project_id, created_by) VALUES ($1, $2, $2, 'h', '{}', $3, $4, 'usr')`, [T, id, workspace, project]),
    );
  const lineages = async () =>
    Object.fromEntries((await db.withTenant(T, (sql) => sql.query<{ key_id: string; lineage_id: string | null }>(`SELECT key_id, lineage_id FROM gateway.api_keys WHERE tenant_id = $1`, [T]))).rows.map((r) => [r.key_id, r.lineage_id]));
  const workspaces = async () =>
    Object.fromEntries((await db.withTenant(T, (sql) => sql.query<{ client_id: string; workspace_id: string | null }>(`SELECT client_id, workspace_id FROM gateway.oauth_clients WHERE tenant_id = $1`, [T]))).rows.map((r) => [r.client_id, r.workspace_id]));

  it('repairs the keys and clients older gateways wrote after 0006 and 0007, then fills those they write after it', async () => {
    await db.withTenant(T, async (sql) => {
      await sql.query(`INSERT INTO gateway.tenants (tenant_id, name, plan) VALUES ($1, 'Rolling', 'free')`, [T]);
      for (const ws of ['ws_a', 'ws_b']) await sql.query(`INSERT INTO gateway.workspaces (tenant_id, workspace_id, name, slug) VALUES ($1, $2, $2, $2)`, [T, ws]);
      await sql.query(`INSERT INTO gateway.projects (tenant_id, project_id, workspace_id, name, slug) VALUES ($1, 'prj_b', 'ws_b', 'B', 'b')`, [T]);
    });
    // Written between 0007 and 0008: k1 by this version; k2 rotated from it by an old pod (no lineage); k3 rotated
    // from k2 by this version, which took k2 as the lineage since k2 had none.
    await oldKey('key_k1', null);
    await oldKey('key_k2', 'key_k1');
    await db.withTenant(T, (sql) =>
      sql.query(`INSERT INTO gateway.api_keys (tenant_id, key_id, type, name, key_hash, prefix, rotated_from, created_by, lineage_id) VALUES ($1, 'key_k3', 'live', 'k3', 'hash-key_k3', 'ck_live', 'key_k2', 'admin', 'key_k2')`, [T]),
    );
    await oldClient('oc_before', null, 'prj_b');
    expect(await lineages()).toEqual({ key_k1: null, key_k2: null, key_k3: 'key_k2' });

    expect(await earlier.upgrade()).toEqual(['0008_fill_what_older_gateways_leave_out.sql']);
    expect(await lineages()).toEqual({ key_k1: null, key_k2: 'key_k1', key_k3: 'key_k1' });
    expect((await workspaces()).oc_before).toBe('ws_b');

    // After 0008, an old pod still serving: a rotation of k3, then of that one, and a new first key.
    await oldKey('key_k4', 'key_k3');
    await oldKey('key_k5', 'key_k4');
    await oldKey('key_solo', null);
    // A rotation from a key that is gone: the predecessor is the lineage, as 0007's lookup answered it.
    await oldKey('key_orphan', 'key_deleted');
    expect(await lineages()).toMatchObject({ key_k4: 'key_k1', key_k5: 'key_k1', key_solo: null, key_orphan: 'key_deleted' });
    const lineage = async (id: string) => (await db.query<{ lineage_id: string }>(`SELECT lineage_id FROM gateway.auth_key($1)`, [`hash-${id}`])).rows[0]?.lineage_id;
    expect(await lineage('key_k5')).toBe('key_k1');
    expect(await lineage('key_solo')).toBe('key_solo');

    // Clients an old pod creates: one of a project gets the project's workspace, whatever it was given; the others
    // keep what they were given.
    await oldClient('oc_none', null, 'prj_b');
    await oldClient('oc_other', 'ws_a', 'prj_b');
    await oldClient('oc_tenant', null, null);
    await oldClient('oc_workspace', 'ws_a', null);
    expect(await workspaces()).toEqual({ oc_before: 'ws_b', oc_none: 'ws_b', oc_other: 'ws_b', oc_tenant: null, oc_workspace: 'ws_a' });
  });
});
