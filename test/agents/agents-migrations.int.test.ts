import { randomUUID } from 'node:crypto';
import { AGENTS_MIGRATIONS } from '@lore/agents';
import { GATEWAY_MIGRATIONS_DIR } from '@lore/gateway';
import { runMigrations, type PgliteDb } from '@lore/runtime';
import { earlierDatabase, type EarlierDatabase } from '../support/migrations';

jest.setTimeout(120_000);

/**
 * Agents migrations over data written before them (embedded mode's database, as an upgraded data directory holds it):
 * 0009 gives the workflows, lists and seed statuses a rotated key's replacement started before gateway migration 0007
 * to the key's lineage, the first key of its rotation chain, which is the replacement's identity subject since.
 */
describe.each([
  ['with the gateway\'s lineage column (gateway migrated first, as the Job and embedded mode do)', true],
  ['along rotated_from, before the gateway\'s migration 0007 has run', false],
])('agents migration 0009: a replacement key\'s rows to its lineage, %s', (_name, gatewayFirst) => {
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

  it('re-owns rows of keys whose lineage is another key, and leaves every other owner as it was', async () => {
    await runMigrations(db, AGENTS_MIGRATIONS);
    const threads: Record<string, string> = {};
    await db.withTenant(T, async (sql) => {
      await sql.query(`INSERT INTO gateway.tenants (tenant_id, name, plan) VALUES ($1, 'Rotated', 'free')`, [T]);
      const key = (id: string, from: string | null, replacedBy: string | null, type = 'live') =>
        sql.query(`INSERT INTO gateway.api_keys (tenant_id, key_id, type, name, key_hash, prefix, memory_id, rotated_from, replaced_by, created_by) VALUES ($1, $2, $3, $2, $4, 'ck_live', $5, $6, $7, 'admin')`, [T, id, type, `hash-${id}`, type === 'memory' ? 'mem_1' : null, from, replacedBy]);
      await key('key_a1', null, 'key_a2');
      await key('key_a2', 'key_a1', 'key_a3');
      await key('key_a3', 'key_a2', null);
      await key('key_b', null, null);
      await key('key_m1', null, 'key_m2', 'memory');
      await key('key_m2', 'key_m1', null, 'memory');
      // As the code before gateway migration 0007 wrote them: each key owned by its own id.
      for (const owner of ['ck_live:key_a1', 'ck_live:key_a2', 'ck_live:key_a3', 'ck_live:key_b', 'mk:key_m2', 'session:key_a2', 'oauth:oc_1']) {
        const thread = randomUUID();
        const list = randomUUID();
        threads[owner] = thread;
        const [credential, subject] = owner.split(':');
        await sql.query(`INSERT INTO agents.lists (tenant_id, list_id, thread_id, owner, list_type) VALUES ($1, $2, $3, $4, 'company_search')`, [T, list, thread, owner]);
        await sql.query(
          `INSERT INTO agents.workflows (tenant_id, thread_id, kind, owner, status, state, list_id) VALUES ($1, $2, 'company_search', $3, 'processing', $4, $5)`,
          [T, thread, owner, JSON.stringify({ starter: { workspace_id: 'ws_1', memory_id: 'mem_1', credential, subject, role: 'tenant_admin' } }), list],
        );
      }
      await sql.query(`INSERT INTO agents.seed_statuses (tenant_id, seed_type, prompt_id, prompt, status, owner) VALUES ($1, 'company', 'p1', 'p', 'completed', 'ck_live:key_a3')`, [T]);
    });
    if (gatewayFirst) await earlier.upgrade();
    // The upgrade: agents' migrations run again (0009 as a data directory of that time has not had it).
    await db.asOwner((sql) => sql.query(`DELETE FROM agents.schema_migrations WHERE version = '0009_key_owners_to_lineage.sql'`));
    expect(await runMigrations(db, AGENTS_MIGRATIONS)).toEqual(['0009_key_owners_to_lineage.sql']);

    const rows = await db.withTenant(T, async (sql) => (await sql.query<{ thread_id: string; owner: string; list_owner: string; subject: string }>(
      `SELECT w.thread_id, w.owner, l.owner AS list_owner, w.state->'starter'->>'subject' AS subject
         FROM agents.workflows w JOIN agents.lists l ON l.tenant_id = w.tenant_id AND l.list_id = w.list_id WHERE w.tenant_id = $1`, [T])).rows);
    const after = (owner: string) => rows.find((r) => r.thread_id === threads[owner]);
    const expected: Record<string, [string, string]> = {
      'ck_live:key_a1': ['ck_live:key_a1', 'key_a1'],
      'ck_live:key_a2': ['ck_live:key_a1', 'key_a1'],
      'ck_live:key_a3': ['ck_live:key_a1', 'key_a1'],
      'ck_live:key_b': ['ck_live:key_b', 'key_b'],
      'mk:key_m2': ['mk:key_m1', 'key_m1'],
      // Users and OAuth clients are never rotated: a user whose id looks like a key's is left alone.
      'session:key_a2': ['session:key_a2', 'key_a2'],
      'oauth:oc_1': ['oauth:oc_1', 'oc_1'],
    };
    for (const [before, [owner, subject]] of Object.entries(expected)) {
      expect({ before, ...after(before) }).toEqual({ before, thread_id: threads[before], owner, list_owner: owner, subject });
    }
    const seed = await db.withTenant(T, async (sql) => (await sql.query<{ owner: string }>(`SELECT owner FROM agents.seed_statuses WHERE tenant_id = $1`, [T])).rows);
    expect(seed).toEqual([{ owner: 'ck_live:key_a1' }]);

    // Whichever ran first, the owners are the subjects the gateway's authentication answers once it is migrated.
    if (!gatewayFirst) await earlier.upgrade();
    const lineage = async (id: string) => (await db.query<{ lineage_id: string }>(`SELECT lineage_id FROM gateway.auth_key($1)`, [`hash-${id}`])).rows[0]?.lineage_id;
    expect(await lineage('key_a3')).toBe('key_a1');
    expect(await lineage('key_m2')).toBe('key_m1');
  });
});
