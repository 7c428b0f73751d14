import type { Sql } from '@lore/runtime';
import type { AccessType } from '../domain/connectors';
import { countUpTo, lockCount } from './caps';

export interface ConnectorFields {
  name: string;
  source: string;
  input_type: string;
  connector_specific_config: Record<string, unknown>;
  refresh_freq: number;
  prune_freq: number | null;
  indexing_start: Date | null;
  /** The defaults of the pairs made from it. */
  access_type: AccessType;
  groups: number[];
}

export interface ConnectorRow extends ConnectorFields {
  tenant_id: string;
  id: number;
  /** Where it belongs: the workspace and memory of the credential that made it ('' when unknown: made before). */
  workspace_id: string;
  memory_id: string;
  time_created: Date;
  time_updated: Date;
}

const COLS =
  'tenant_id, id, name, source, input_type, connector_specific_config, refresh_freq, prune_freq, indexing_start, access_type, groups, workspace_id, memory_id, time_created, time_updated';

/**
 * The tenant's connectors, paired or not (counted up to `limit`), after taking the lock every connector create of the
 * tenant takes.
 */
export async function countConnectorsLocked(sql: Sql, tenantId: string, limit: number): Promise<number> {
  await lockCount(sql, 'core.connectors', tenantId);
  return countUpTo(sql, 'FROM core.connectors WHERE tenant_id = $1', [tenantId], limit);
}

export async function insertConnector(sql: Sql, tenantId: string, f: ConnectorFields, place: { workspace_id: string; memory_id: string }): Promise<ConnectorRow> {
  const r = await sql.query<ConnectorRow>(
    `INSERT INTO core.connectors (tenant_id, name, source, input_type, connector_specific_config, refresh_freq, prune_freq, indexing_start, access_type, groups, workspace_id, memory_id)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11, $12) RETURNING ${COLS}`,
    [tenantId, f.name, f.source, f.input_type, JSON.stringify(f.connector_specific_config), f.refresh_freq, f.prune_freq, f.indexing_start, f.access_type, f.groups, place.workspace_id, place.memory_id],
  );
  return r.rows[0]!;
}

/**
 * One connector of the tenant. `lock`: `share` while a pair is made from it (it cannot be deleted meanwhile),
 * `update` while it may be deleted.
 */
export async function getConnector(sql: Sql, tenantId: string, id: number, lock?: 'share' | 'update'): Promise<ConnectorRow | null> {
  const suffix = lock === 'share' ? ' FOR SHARE' : lock === 'update' ? ' FOR UPDATE' : '';
  const r = await sql.query<ConnectorRow>(`SELECT ${COLS} FROM core.connectors WHERE tenant_id = $1 AND id = $2${suffix}`, [tenantId, id]);
  return r.rows[0] ?? null;
}

export async function connectorsByIds(sql: Sql, tenantId: string, ids: number[]): Promise<ConnectorRow[]> {
  if (ids.length === 0) return [];
  const r = await sql.query<ConnectorRow>(`SELECT ${COLS} FROM core.connectors WHERE tenant_id = $1 AND id = ANY($2::integer[])`, [tenantId, ids]);
  return r.rows;
}

/** Deletes the connector unless a pair still reads it; true when it was deleted. */
export async function deleteConnectorWithoutPairs(sql: Sql, tenantId: string, id: number): Promise<boolean> {
  const r = await sql.query(
    `DELETE FROM core.connectors c WHERE c.tenant_id = $1 AND c.id = $2
       AND NOT EXISTS (SELECT 1 FROM core.cc_pairs p WHERE p.tenant_id = c.tenant_id AND p.connector_id = c.id)`,
    [tenantId, id],
  );
  return r.rowCount > 0;
}

/** Those of `locations` that a `file` connector of the tenant names in its `file_locations`. */
export async function fileLocationsInUse(sql: Sql, tenantId: string, locations: string[]): Promise<Set<string>> {
  if (locations.length === 0) return new Set();
  const r = await sql.query<{ location: string }>(
    `SELECT DISTINCT l.location
       FROM core.connectors c
       CROSS JOIN LATERAL jsonb_array_elements_text(
         CASE WHEN jsonb_typeof(c.connector_specific_config->'file_locations') = 'array' THEN c.connector_specific_config->'file_locations' ELSE '[]'::jsonb END
       ) AS l(location)
      WHERE c.tenant_id = $1 AND c.source = 'file' AND l.location = ANY($2::text[])`,
    [tenantId, locations],
  );
  return new Set(r.rows.map((x) => x.location));
}
