import type { Db, Sql } from '@lore/runtime';
import { iso, isoRequired } from './rows';

export interface Memory {
  memory_id: string;
  workspace_id: string;
  name: string;
  hostname: string;
  deleted_at: string | null;
  created_at: string;
}

const COLS = 'memory_id, workspace_id, name, hostname, deleted_at, created_at';

function toMemory(r: Record<string, unknown>): Memory {
  return {
    memory_id: String(r.memory_id),
    workspace_id: String(r.workspace_id),
    name: String(r.name),
    hostname: String(r.hostname),
    deleted_at: iso(r.deleted_at),
    created_at: isoRequired(r.created_at),
  };
}

export async function insertMemory(sql: Sql, tenantId: string, m: { memory_id: string; workspace_id: string; name: string; hostname: string }): Promise<Memory> {
  const r = await sql.query(
    `INSERT INTO gateway.memories (tenant_id, memory_id, workspace_id, name, hostname) VALUES ($1, $2, $3, $4, lower($5)) RETURNING ${COLS}`,
    [tenantId, m.memory_id, m.workspace_id, m.name, m.hostname],
  );
  return toMemory(r.rows[0]!);
}

/** Create-or-update by id; a soft-deleted memory comes back to life (the operator re-applied it). */
export async function upsertMemoryIn(sql: Sql, tenantId: string, m: { memory_id: string; workspace_id: string; name: string; hostname: string }): Promise<Memory> {
  const r = await sql.query(
    `INSERT INTO gateway.memories (tenant_id, memory_id, workspace_id, name, hostname) VALUES ($1, $2, $3, $4, lower($5))
     ON CONFLICT (memory_id) DO UPDATE SET workspace_id = EXCLUDED.workspace_id, name = EXCLUDED.name,
       hostname = EXCLUDED.hostname, deleted_at = NULL, updated_at = now()
     RETURNING ${COLS}`,
    [tenantId, m.memory_id, m.workspace_id, m.name, m.hostname],
  );
  return toMemory(r.rows[0]!);
}

export async function getMemoryIn(sql: Sql, tenantId: string, memoryId: string): Promise<Memory | null> {
  const r = await sql.query(`SELECT ${COLS} FROM gateway.memories WHERE tenant_id = $1 AND memory_id = $2`, [tenantId, memoryId]);
  return r.rows[0] ? toMemory(r.rows[0]) : null;
}

/** The tenant's memories among `memoryIds`, deleted ones included (the caller decides what they count for). */
export async function memoriesIn(sql: Sql, tenantId: string, memoryIds: readonly string[]): Promise<Memory[]> {
  if (memoryIds.length === 0) return [];
  const r = await sql.query(`SELECT ${COLS} FROM gateway.memories WHERE tenant_id = $1 AND memory_id = ANY($2::text[])`, [tenantId, [...memoryIds]]);
  return r.rows.map(toMemory);
}

export async function getMemory(db: Db, tenantId: string, memoryId: string): Promise<Memory | null> {
  return db.withTenant(tenantId, (sql) => getMemoryIn(sql, tenantId, memoryId));
}

export async function softDeleteMemoryIn(sql: Sql, tenantId: string, memoryId: string): Promise<boolean> {
  const r = await sql.query(
    `UPDATE gateway.memories SET deleted_at = now(), updated_at = now() WHERE tenant_id = $1 AND memory_id = $2 AND deleted_at IS NULL`,
    [tenantId, memoryId],
  );
  return r.rowCount > 0;
}

export async function hardDeleteMemoryIn(sql: Sql, tenantId: string, memoryId: string): Promise<boolean> {
  const r = await sql.query(`DELETE FROM gateway.memories WHERE tenant_id = $1 AND memory_id = $2`, [tenantId, memoryId]);
  return r.rowCount > 0;
}

/** Which tenant owns a live hostname (SECURITY DEFINER lookup: the tenant is not known yet). */
export async function memoryByHostname(db: Db, hostname: string): Promise<{ tenant_id: string; memory_id: string; workspace_id: string } | null> {
  const r = await db.query<{ tenant_id: string; memory_id: string; workspace_id: string }>(`SELECT * FROM gateway.memory_by_hostname($1)`, [hostname]);
  return r.rows[0] ?? null;
}

/** Which tenant owns a memory id, across the platform (ids are global). */
export async function memoryOwner(db: Db, memoryId: string): Promise<string | null> {
  const r = await db.query<{ owner: string | null }>(`SELECT gateway.memory_owner($1) AS owner`, [memoryId]);
  return r.rows[0]?.owner ?? null;
}
