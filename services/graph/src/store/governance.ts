import type { Sql } from '@lore/runtime';
import type { HealthInputs } from '../domain/health';

export interface ContradictionSide {
  document_id: string;
  title: string | null;
  value: string;
  sentence: string;
}

export interface ContradictionView {
  contradiction_id: string;
  entity: string;
  attribute: string;
  status: 'open' | 'resolved';
  sources: [ContradictionSide, ContradictionSide];
  resolution: string | null;
  kept_document_id: string | null;
  note: string | null;
  detected_at: string;
  resolved_at: string | null;
}

interface Raw {
  contradiction_id: string;
  entity_name: string;
  attribute: string;
  status: 'open' | 'resolved';
  doc_a: string;
  value_a: string;
  sentence_a: string;
  title_a: string | null;
  doc_b: string;
  value_b: string;
  sentence_b: string;
  title_b: string | null;
  resolution: string | null;
  kept_doc_id: string | null;
  note: string | null;
  workspace_id: string;
  detected_at: Date | string;
  resolved_at: Date | string | null;
}

const SELECT = `SELECT c.contradiction_id, c.entity_name, c.attribute, c.status, c.doc_a, c.value_a, c.sentence_a, da.title AS title_a,
         c.doc_b, c.value_b, c.sentence_b, db.title AS title_b, c.resolution, c.kept_doc_id, c.note, c.workspace_id, c.detected_at, c.resolved_at
    FROM graph.contradictions c
    LEFT JOIN graph.documents da ON da.tenant_id = c.tenant_id AND da.doc_id = c.doc_a
    LEFT JOIN graph.documents db ON db.tenant_id = c.tenant_id AND db.doc_id = c.doc_b`;

function toView(r: Raw): ContradictionView {
  return {
    contradiction_id: r.contradiction_id,
    entity: r.entity_name,
    attribute: r.attribute,
    status: r.status,
    sources: [
      { document_id: r.doc_a, title: r.title_a, value: r.value_a, sentence: r.sentence_a },
      { document_id: r.doc_b, title: r.title_b, value: r.value_b, sentence: r.sentence_b },
    ],
    resolution: r.resolution,
    kept_document_id: r.kept_doc_id,
    note: r.note,
    detected_at: new Date(r.detected_at).toISOString(),
    resolved_at: r.resolved_at ? new Date(r.resolved_at).toISOString() : null,
  };
}

/**
 * A contradiction quotes both documents' sentences: with `groups` (a caller who is not an administrator: the groups
 * whose private documents it sees) one that involves a document the caller may not see is left out. A side whose
 * document is gone hides nothing.
 */
const VISIBLE = (param: string) =>
  `(${param}::integer[] IS NULL OR ((coalesce(da.access_public, true) OR da.access_groups && ${param}::integer[])
     AND (coalesce(db.access_public, true) OR db.access_groups && ${param}::integer[])))`;

export async function listContradictions(
  sql: Sql,
  tenantId: string,
  memoryId: string,
  status: 'open' | 'resolved' | undefined,
  limit: number,
  groups: readonly number[] | null = null,
): Promise<ContradictionView[]> {
  const r = await sql.query<Raw>(
    `${SELECT} WHERE c.tenant_id = $1 AND c.memory_id = $2 AND ($3::text IS NULL OR c.status = $3) AND ${VISIBLE('$5')}
      ORDER BY c.detected_at DESC, c.contradiction_id LIMIT $4`,
    [tenantId, memoryId, status ?? null, limit, groups],
  );
  return r.rows.map(toView);
}

export async function getContradiction(
  sql: Sql,
  tenantId: string,
  memoryId: string,
  id: string,
  groups: readonly number[] | null = null,
): Promise<(ContradictionView & { workspace_id: string }) | null> {
  const r = await sql.query<Raw>(`${SELECT} WHERE c.tenant_id = $1 AND c.memory_id = $2 AND c.contradiction_id = $3 AND ${VISIBLE('$4')}`, [
    tenantId,
    memoryId,
    id,
    groups,
  ]);
  return r.rows[0] ? { ...toView(r.rows[0]), workspace_id: r.rows[0].workspace_id } : null;
}

/** Resolves an open contradiction; false when it was already resolved (the caller answers 409). */
export async function resolveContradiction(
  sql: Sql,
  tenantId: string,
  memoryId: string,
  id: string,
  resolution: string,
  keptDocId: string | null,
  note: string | null,
): Promise<boolean> {
  const r = await sql.query(
    `UPDATE graph.contradictions SET status = 'resolved', resolution = $4, kept_doc_id = $5, note = $6, resolved_at = now()
      WHERE tenant_id = $1 AND memory_id = $2 AND contradiction_id = $3 AND status = 'open'`,
    [tenantId, memoryId, id, resolution, keptDocId, note],
  );
  return r.rowCount === 1;
}

/** Everything the health score needs, in one round trip. */
export async function healthInputs(sql: Sql, tenantId: string, memoryId: string, staleAfterMs: number): Promise<HealthInputs> {
  const r = await sql.query<Record<keyof HealthInputs, string | number>>(
    `SELECT
       (SELECT count(*) FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2) AS documents,
       (SELECT count(*) FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND status = 'indexed') AS indexed,
       (SELECT count(*) FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND status = 'failed') AS failed,
       (SELECT count(*) FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND status = 'queued'
           AND created_at < now() - make_interval(secs => $3)) AS stale,
       (SELECT count(*) FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND needs_review) AS needs_review,
       (SELECT count(*) FROM graph.contradictions WHERE tenant_id = $1 AND memory_id = $2 AND status = 'open') AS open_contradictions,
       (SELECT count(*) FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2 AND dlp_matches > 0) AS dlp_flagged,
       (SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM graph.documents WHERE tenant_id = $1 AND memory_id = $2
           GROUP BY content_sha256 HAVING count(*) > 1) x) AS duplicates,
       (SELECT count(*) FROM graph.vaults WHERE tenant_id = $1 AND memory_id = $2 AND vault_id <> 'v_unassigned') AS vaults,
       (SELECT count(*) FROM graph.vaults v WHERE v.tenant_id = $1 AND v.memory_id = $2 AND v.vault_id <> 'v_unassigned'
           AND NOT EXISTS (SELECT 1 FROM graph.documents d WHERE d.tenant_id = v.tenant_id AND d.memory_id = v.memory_id AND d.vault_id = v.vault_id)) AS empty_vaults`,
    [tenantId, memoryId, staleAfterMs / 1000],
  );
  const row = r.rows[0] ?? {};
  const n = (k: keyof HealthInputs) => Number((row as Record<string, unknown>)[k] ?? 0);
  return {
    documents: n('documents'),
    indexed: n('indexed'),
    failed: n('failed'),
    stale: n('stale'),
    needs_review: n('needs_review'),
    open_contradictions: n('open_contradictions'),
    dlp_flagged: n('dlp_flagged'),
    duplicates: n('duplicates'),
    vaults: n('vaults'),
    empty_vaults: n('empty_vaults'),
  };
}
