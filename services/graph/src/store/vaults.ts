import type { Sql } from '@lore/runtime';
import { UNASSIGNED_VAULT, type VaultProfile } from '../domain/routing';

export interface VaultRow extends VaultProfile {
  document_count: number;
  created_at: string;
  updated_at: string;
}

const COLUMNS = `v.vault_id, v.name, v.description, v.examples, v.created_at, v.updated_at,
  (SELECT count(*) FROM graph.documents d WHERE d.tenant_id = v.tenant_id AND d.memory_id = v.memory_id AND d.vault_id = v.vault_id)::int AS document_count`;

interface Raw {
  vault_id: string;
  name: string;
  description: string;
  examples: string[];
  created_at: Date | string;
  updated_at: Date | string;
  document_count: number;
}

function toRow(r: Raw): VaultRow {
  return {
    vault_id: r.vault_id,
    name: r.name,
    description: r.description,
    examples: r.examples,
    document_count: Number(r.document_count),
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
  };
}

export async function listVaults(sql: Sql, tenantId: string, memoryId: string): Promise<VaultRow[]> {
  const r = await sql.query<Raw>(
    `SELECT ${COLUMNS} FROM graph.vaults v WHERE v.tenant_id = $1 AND v.memory_id = $2 ORDER BY v.vault_id = $3 DESC, v.name LIMIT 1000`,
    [tenantId, memoryId, UNASSIGNED_VAULT],
  );
  return r.rows.map(toRow);
}

/**
 * Profiles for the classifier (no counts: routing runs on every ingest). With `lock` (a transaction that files
 * documents into the vault the classifier picks) every vault read stays locked FOR KEY SHARE until it ends, as
 * `lockVault` locks one, so none of them can be deleted before the documents are stored; a vault whose deletion is
 * under way is waited for and then left out.
 */
export async function vaultProfiles(sql: Sql, tenantId: string, memoryId: string, lock = false): Promise<VaultProfile[]> {
  const r = await sql.query<VaultProfile>(
    `SELECT vault_id, name, description, examples FROM graph.vaults WHERE tenant_id = $1 AND memory_id = $2 ORDER BY vault_id LIMIT 1000${lock ? ' FOR KEY SHARE' : ''}`,
    [tenantId, memoryId],
  );
  return r.rows;
}

export async function getVault(sql: Sql, tenantId: string, memoryId: string, vaultId: string): Promise<VaultRow | null> {
  const r = await sql.query<Raw>(`SELECT ${COLUMNS} FROM graph.vaults v WHERE v.tenant_id = $1 AND v.memory_id = $2 AND v.vault_id = $3`, [
    tenantId,
    memoryId,
    vaultId,
  ]);
  return r.rows[0] ? toRow(r.rows[0]) : null;
}

export async function insertVault(sql: Sql, tenantId: string, memoryId: string, v: VaultProfile): Promise<boolean> {
  const r = await sql.query(
    `INSERT INTO graph.vaults (tenant_id, memory_id, vault_id, name, description, examples) VALUES ($1, $2, $3, $4, $5, $6::jsonb)
     ON CONFLICT DO NOTHING`,
    [tenantId, memoryId, v.vault_id, v.name, v.description, JSON.stringify(v.examples)],
  );
  return r.rowCount === 1;
}

export async function updateVault(
  sql: Sql,
  tenantId: string,
  memoryId: string,
  vaultId: string,
  patch: Partial<Pick<VaultProfile, 'name' | 'description' | 'examples'>>,
): Promise<boolean> {
  const r = await sql.query(
    `UPDATE graph.vaults SET name = coalesce($4, name), description = coalesce($5, description),
            examples = coalesce($6::jsonb, examples), updated_at = now()
      WHERE tenant_id = $1 AND memory_id = $2 AND vault_id = $3`,
    [tenantId, memoryId, vaultId, patch.name ?? null, patch.description ?? null, patch.examples ? JSON.stringify(patch.examples) : null],
  );
  return r.rowCount === 1;
}

/**
 * True when the vault exists, and then its row stays locked FOR KEY SHARE until the transaction ends. Whatever files
 * a document into a named vault (manual ingest, review filing) takes this lock first: a deletion of the vault
 * (which locks its row FOR UPDATE before moving the vault's documents) either committed before, and the vault is
 * missing here, or waits for this transaction and then moves what it filed. Without it a document filed while its
 * vault was being deleted stayed in a vault that no longer exists. KEY SHARE conflicts with nothing else (other
 * filings, a PATCH of the vault), so writers never wait on each other here.
 */
export async function lockVault(sql: Sql, tenantId: string, memoryId: string, vaultId: string): Promise<boolean> {
  const r = await sql.query(`SELECT 1 FROM graph.vaults WHERE tenant_id = $1 AND memory_id = $2 AND vault_id = $3 FOR KEY SHARE`, [tenantId, memoryId, vaultId]);
  return r.rowCount === 1;
}

/**
 * Deletes a vault; its documents go back to `v_unassigned` and into the review queue (their chunks too). Returns
 * the moved count, or null when there is no such vault. The vault's row is locked FOR UPDATE first, so a writer
 * filing into it (`lockVault`, `vaultProfiles` with a lock) either committed before — and its document is moved here — or waits and then finds
 * the vault gone; a document being indexed holds its row (`loadDocumentToIndex` with a lock), so the UPDATE of the
 * documents waits for its chunks and the UPDATE of the chunks then moves them too.
 */
export async function deleteVault(sql: Sql, tenantId: string, memoryId: string, vaultId: string): Promise<number | null> {
  const locked = await sql.query(`SELECT 1 FROM graph.vaults WHERE tenant_id = $1 AND memory_id = $2 AND vault_id = $3 FOR UPDATE`, [tenantId, memoryId, vaultId]);
  if (locked.rowCount !== 1) return null;
  const moved = await sql.query(
    `UPDATE graph.documents SET vault_id = $4, needs_review = true, updated_at = now()
      WHERE tenant_id = $1 AND memory_id = $2 AND vault_id = $3`,
    [tenantId, memoryId, vaultId, UNASSIGNED_VAULT],
  );
  await sql.query(`UPDATE graph.chunks SET vault_id = $4 WHERE tenant_id = $1 AND memory_id = $2 AND vault_id = $3`, [
    tenantId,
    memoryId,
    vaultId,
    UNASSIGNED_VAULT,
  ]);
  const r = await sql.query(`DELETE FROM graph.vaults WHERE tenant_id = $1 AND memory_id = $2 AND vault_id = $3`, [tenantId, memoryId, vaultId]);
  return r.rowCount === 1 ? moved.rowCount : null;
}
