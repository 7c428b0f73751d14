import type { Sql } from '@lore/runtime';

export interface PersonaFields {
  name: string;
  description: string;
  instructions: string;
  tool_ids: number[];
  source_types: string[] | null;
  model: string | null;
  temperature: number | null;
}

export interface PersonaRow extends PersonaFields {
  tenant_id: string;
  persona_id: number;
  is_default: boolean;
  created_at: Date;
  updated_at: Date;
}

/**
 * A temperature as its `real` column holds it: PostgreSQL refuses a value closer to 0 than single precision reaches
 * ("value out of range: underflow") where single precision reads it as 0, so it is rounded to single precision first.
 */
export const asReal = (value: number | null): number | null => (value === null ? null : Math.fround(value));

const COLS = 'tenant_id, persona_id, name, description, instructions, tool_ids, source_types, model, temperature, is_default, created_at, updated_at';

/** Writes the tenant's default persona unless it exists (concurrent first requests write it once). */
export async function ensureDefaultPersona(sql: Sql, tenantId: string, id: number, fields: PersonaFields): Promise<void> {
  await sql.query(
    `INSERT INTO core.personas (tenant_id, persona_id, name, description, instructions, tool_ids, source_types, model, temperature, is_default)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, true) ON CONFLICT (tenant_id, persona_id) DO NOTHING`,
    [tenantId, id, fields.name, fields.description, fields.instructions, fields.tool_ids, fields.source_types, fields.model, asReal(fields.temperature)],
  );
}

export async function listPersonas(sql: Sql, tenantId: string): Promise<PersonaRow[]> {
  const r = await sql.query<PersonaRow>(`SELECT ${COLS} FROM core.personas WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY persona_id`, [tenantId]);
  return r.rows;
}

/** A live persona; `lock` takes a row lock (a session being created must not see it deleted meanwhile). */
export async function getPersona(sql: Sql, tenantId: string, id: number, lock = false): Promise<PersonaRow | null> {
  const r = await sql.query<PersonaRow>(
    `SELECT ${COLS} FROM core.personas WHERE tenant_id = $1 AND persona_id = $2 AND deleted_at IS NULL${lock ? ' FOR SHARE' : ''}`,
    [tenantId, id],
  );
  return r.rows[0] ?? null;
}

/**
 * The tenant's live personas but the default (id 0), counted after a transaction-scoped lock on its persona list: concurrent creates of one
 * tenant count one after the other, so a limit checked with it cannot be overshot.
 */
export async function countPersonasLocked(sql: Sql, tenantId: string): Promise<number> {
  await sql.query(`SELECT pg_advisory_xact_lock(hashtext('core.personas'), hashtext($1))`, [tenantId]);
  const r = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM core.personas WHERE tenant_id = $1 AND deleted_at IS NULL AND persona_id <> 0`, [tenantId]);
  return r.rows[0]!.n;
}

export async function insertPersona(sql: Sql, tenantId: string, fields: PersonaFields): Promise<PersonaRow> {
  const r = await sql.query<PersonaRow>(
    `INSERT INTO core.personas (tenant_id, name, description, instructions, tool_ids, source_types, model, temperature)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLS}`,
    [tenantId, fields.name, fields.description, fields.instructions, fields.tool_ids, fields.source_types, fields.model, asReal(fields.temperature)],
  );
  return r.rows[0]!;
}

export async function updatePersona(sql: Sql, tenantId: string, id: number, fields: PersonaFields): Promise<PersonaRow | null> {
  const r = await sql.query<PersonaRow>(
    `UPDATE core.personas SET name = $3, description = $4, instructions = $5, tool_ids = $6, source_types = $7, model = $8, temperature = $9, updated_at = now()
     WHERE tenant_id = $1 AND persona_id = $2 AND deleted_at IS NULL RETURNING ${COLS}`,
    [tenantId, id, fields.name, fields.description, fields.instructions, fields.tool_ids, fields.source_types, fields.model, asReal(fields.temperature)],
  );
  return r.rows[0] ?? null;
}

/** Soft delete: sessions keep naming the persona they were created with. */
export async function deletePersona(sql: Sql, tenantId: string, id: number): Promise<boolean> {
  const r = await sql.query(`UPDATE core.personas SET deleted_at = now() WHERE tenant_id = $1 AND persona_id = $2 AND deleted_at IS NULL`, [tenantId, id]);
  return (r.rowCount ?? 0) > 0;
}

/** Names of personas by id, deleted ones included (a session's detail names its persona). */
export async function personaName(sql: Sql, tenantId: string, id: number): Promise<string | null> {
  const r = await sql.query<{ name: string }>(`SELECT name FROM core.personas WHERE tenant_id = $1 AND persona_id = $2`, [tenantId, id]);
  return r.rows[0]?.name ?? null;
}

/** A persona whether or not it was deleted since (a session keeps answering with the persona it started with). */
export async function personaOfSession(sql: Sql, tenantId: string, id: number): Promise<PersonaRow | null> {
  const r = await sql.query<PersonaRow>(`SELECT ${COLS} FROM core.personas WHERE tenant_id = $1 AND persona_id = $2`, [tenantId, id]);
  return r.rows[0] ?? null;
}
