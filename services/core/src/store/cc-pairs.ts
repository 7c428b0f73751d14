import type { Sql } from '@lore/runtime';
import { countUpTo, lockCount } from './caps';
import type { AccessType, CcPairStatus } from '../domain/connectors';

export interface CcPairRow {
  tenant_id: string;
  id: number;
  connector_id: number;
  credential_id: number;
  name: string;
  access_type: AccessType;
  groups: number[];
  status: CcPairStatus;
  num_docs_indexed: number;
  in_repeated_error_state: boolean;
  last_index_attempt_status: string | null;
  number_of_index_attempts: number;
  /** Where its documents are indexed: the creating identity's workspace and memory ('' when it had none). */
  workspace_id: string;
  memory_id: string;
  /** Who the indexer acts for when it writes the pair's documents (the creating administrator). */
  creator_credential: string;
  creator_subject: string;
  last_successful_index_time: Date | null;
  last_pruned: Date | null;
  time_created: Date;
  time_updated: Date;
}

const COLS =
  'tenant_id, id, connector_id, credential_id, name, access_type, groups, status, num_docs_indexed, in_repeated_error_state, last_index_attempt_status, number_of_index_attempts, ' +
  'workspace_id, memory_id, creator_credential, creator_subject, last_successful_index_time, last_pruned, time_created, time_updated';

/** The new pair, or null when the connector already has this credential. */
/** The tenant's pairs, counted up to `limit` under a lock held until the transaction ends (a cap's check and insert). */
export async function countCcPairsLocked(sql: Sql, tenantId: string, limit: number): Promise<number> {
  await lockCount(sql, 'core.cc_pairs', tenantId);
  return countUpTo(sql, 'FROM core.cc_pairs WHERE tenant_id = $1', [tenantId], limit);
}

export async function insertCcPair(
  sql: Sql,
  tenantId: string,
  p: {
    connector_id: number;
    credential_id: number;
    name: string;
    access_type: AccessType;
    groups: number[];
    workspace_id: string;
    memory_id: string;
    creator_credential: string;
    creator_subject: string;
  },
): Promise<CcPairRow | null> {
  const r = await sql.query<CcPairRow>(
    `INSERT INTO core.cc_pairs (tenant_id, connector_id, credential_id, name, access_type, groups, workspace_id, memory_id, creator_credential, creator_subject)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (tenant_id, connector_id, credential_id) DO NOTHING RETURNING ${COLS}`,
    [tenantId, p.connector_id, p.credential_id, p.name, p.access_type, p.groups, p.workspace_id, p.memory_id, p.creator_credential, p.creator_subject],
  );
  return r.rows[0] ?? null;
}

/** The tenant's pairs in id order; with `credentialId`, only those reading with that credential. */
export async function listCcPairs(sql: Sql, tenantId: string, credentialId: number | null): Promise<CcPairRow[]> {
  const r =
    credentialId === null
      ? await sql.query<CcPairRow>(`SELECT ${COLS} FROM core.cc_pairs WHERE tenant_id = $1 ORDER BY id`, [tenantId])
      : await sql.query<CcPairRow>(`SELECT ${COLS} FROM core.cc_pairs WHERE tenant_id = $1 AND credential_id = $2 ORDER BY id`, [tenantId, credentialId]);
  return r.rows;
}

/** One pair of the tenant; `lock`: FOR UPDATE. */
export async function getCcPair(sql: Sql, tenantId: string, id: number, lock = false): Promise<CcPairRow | null> {
  const r = await sql.query<CcPairRow>(`SELECT ${COLS} FROM core.cc_pairs WHERE tenant_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [tenantId, id]);
  return r.rows[0] ?? null;
}

/** The pair of a connector and a credential; `lock`: FOR UPDATE. */
export async function ccPairOf(sql: Sql, tenantId: string, connectorId: number, credentialId: number, lock = false): Promise<CcPairRow | null> {
  const r = await sql.query<CcPairRow>(
    `SELECT ${COLS} FROM core.cc_pairs WHERE tenant_id = $1 AND connector_id = $2 AND credential_id = $3${lock ? ' FOR UPDATE' : ''}`,
    [tenantId, connectorId, credentialId],
  );
  return r.rows[0] ?? null;
}

/** Each connector's credential ids (ascending), from its pairs. */
export async function credentialIdsByConnector(sql: Sql, tenantId: string, connectorIds: number[]): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>();
  if (connectorIds.length === 0) return out;
  const r = await sql.query<{ connector_id: number; credential_id: number }>(
    `SELECT connector_id, credential_id FROM core.cc_pairs WHERE tenant_id = $1 AND connector_id = ANY($2::integer[]) ORDER BY connector_id, credential_id`,
    [tenantId, connectorIds],
  );
  for (const row of r.rows) out.set(row.connector_id, [...(out.get(row.connector_id) ?? []), row.credential_id]);
  return out;
}

/** Ids of the pairs reading with a credential. */
export async function ccPairIdsOfCredential(sql: Sql, tenantId: string, credentialId: number): Promise<number[]> {
  const r = await sql.query<{ id: number }>(`SELECT id FROM core.cc_pairs WHERE tenant_id = $1 AND credential_id = $2 ORDER BY id`, [tenantId, credentialId]);
  return r.rows.map((x) => x.id);
}

export async function setCcPairStatus(sql: Sql, tenantId: string, id: number, status: CcPairStatus): Promise<CcPairRow> {
  const r = await sql.query<CcPairRow>(`UPDATE core.cc_pairs SET status = $3, time_updated = now() WHERE tenant_id = $1 AND id = $2 RETURNING ${COLS}`, [tenantId, id, status]);
  return r.rows[0]!;
}

export async function deleteCcPair(sql: Sql, tenantId: string, id: number): Promise<void> {
  await sql.query(`DELETE FROM core.cc_pairs WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
}

/** One more attempt was made for the pair. */
export async function countAttempt(sql: Sql, tenantId: string, id: number): Promise<void> {
  await sql.query(`UPDATE core.cc_pairs SET number_of_index_attempts = number_of_index_attempts + 1 WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
}

/**
 * What an ended attempt tells the pair: its documents now, the attempt's status, whether its errors repeat, and
 * (for a run read to its end or to a limit) when its last success started, which the next poll reads changes since.
 */
export async function recordAttemptEnd(
  sql: Sql,
  tenantId: string,
  id: number,
  e: { num_docs_indexed: number; status: string; repeated_errors: boolean; succeeded_from: Date | null; pruned: boolean },
): Promise<void> {
  await sql.query(
    `UPDATE core.cc_pairs SET num_docs_indexed = $3, last_index_attempt_status = $4, in_repeated_error_state = $5,
            last_successful_index_time = coalesce($6::timestamptz, last_successful_index_time),
            last_pruned = CASE WHEN $7 THEN now() ELSE last_pruned END, time_updated = now()
      WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, e.num_docs_indexed, e.status, e.repeated_errors, e.succeeded_from, e.pruned],
  );
}

/** Who holds the pair's write lease: the attempt, and whether it renewed it within `staleMs`. */
export interface WriteLease {
  attemptId: number | null;
  fresh: boolean;
}

/** The pair's write lease, the pair's row locked FOR UPDATE (null: the pair is gone). */
export async function lockWriteLease(sql: Sql, tenantId: string, id: number, staleMs: number): Promise<WriteLease | null> {
  const r = await sql.query<{ writer_attempt_id: number | null; fresh: boolean }>(
    `SELECT writer_attempt_id, coalesce(writer_seen_at >= now() - make_interval(secs => $3::float8 / 1000), false) AS fresh
       FROM core.cc_pairs WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
    [tenantId, id, staleMs],
  );
  const row = r.rows[0];
  return row ? { attemptId: row.writer_attempt_id, fresh: row.fresh } : null;
}

/** Gives the pair's write lease to the attempt (the caller checked it is free), or renews it. */
export async function holdWriteLease(sql: Sql, tenantId: string, id: number, attemptId: number): Promise<void> {
  await sql.query(`UPDATE core.cc_pairs SET writer_attempt_id = $3, writer_seen_at = now() WHERE tenant_id = $1 AND id = $2`, [tenantId, id, attemptId]);
}

/** Renews the lease while the attempt's write goes on; false when it no longer holds it. */
export async function renewWriteLease(sql: Sql, tenantId: string, id: number, attemptId: number): Promise<boolean> {
  const r = await sql.query(`UPDATE core.cc_pairs SET writer_seen_at = now() WHERE tenant_id = $1 AND id = $2 AND writer_attempt_id = $3`, [tenantId, id, attemptId]);
  return r.rowCount === 1;
}

/** The attempt's write ended: the lease is free. */
export async function releaseWriteLease(sql: Sql, tenantId: string, id: number, attemptId: number): Promise<void> {
  await sql.query(`UPDATE core.cc_pairs SET writer_attempt_id = NULL, writer_seen_at = NULL WHERE tenant_id = $1 AND id = $2 AND writer_attempt_id = $3`, [tenantId, id, attemptId]);
}

/** The pair's documents now (updated after each batch a run writes, so it follows the run). */
export async function setDocsIndexed(sql: Sql, tenantId: string, id: number, n: number): Promise<void> {
  await sql.query(`UPDATE core.cc_pairs SET num_docs_indexed = $3 WHERE tenant_id = $1 AND id = $2`, [tenantId, id, n]);
}

/** The pair's documents grew by `n` (the documents a batch kept that it did not have), in the batch's transaction. */
export async function addDocsIndexed(sql: Sql, tenantId: string, id: number, n: number): Promise<void> {
  await sql.query(`UPDATE core.cc_pairs SET num_docs_indexed = num_docs_indexed + $3 WHERE tenant_id = $1 AND id = $2`, [tenantId, id, n]);
}
