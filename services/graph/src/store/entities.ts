import type { Sql } from '@lore/runtime';
import { visibleTo } from './documents';

/** A memory entity as the entities routes show it: its mentions counted over the documents the caller sees. */
export interface EntityRow {
  entity_id: string;
  entity_key: string;
  name: string;
  kind: string;
  mention_count: number;
  document_count: number;
  created_at: string;
}

export interface EntityMentionRow {
  doc_id: string;
  title: string;
  mentions: number;
}

export interface EntityFilter {
  kind?: string;
  /** Only entities this document mentions. */
  docId?: string;
  /** Keyset: entities whose key sorts after this one. */
  after?: string;
  limit: number;
  /** The caller's groups (`visibleGroups`): null sees every document, else public ones and those of its groups. */
  groups: readonly number[] | null;
}

type Raw = Omit<EntityRow, 'created_at'> & { created_at: Date | string };

const toRow = (r: Raw): EntityRow => ({ ...r, created_at: new Date(r.created_at).toISOString() });

/**
 * The mentions of entity `e` in documents the caller sees (`$groups`): an entity only a hidden document names is
 * as absent as another tenant's, and its counts never reveal a hidden document. Uses the mentions' primary key.
 */
const visibleMentions = (groups: string) => `
  JOIN LATERAL (
    SELECT coalesce(sum(m.mentions), 0)::int AS mention_count, count(*)::int AS document_count
      FROM graph.entity_mentions m
      JOIN graph.documents d ON d.tenant_id = m.tenant_id AND d.doc_id = m.doc_id
     WHERE m.tenant_id = e.tenant_id AND m.memory_id = e.memory_id AND m.entity_key = e.entity_key
       AND ${visibleTo('d.', groups)}
  ) v ON v.document_count > 0`;

/** A page of the memory's entities in key order (a stable keyset, whatever ingest adds meanwhile). */
export async function listEntities(sql: Sql, tenantId: string, memoryId: string, f: EntityFilter): Promise<EntityRow[]> {
  const r = await sql.query<Raw>(
    `SELECT e.entity_id, e.entity_key, e.name, e.kind, v.mention_count, v.document_count, e.created_at
       FROM graph.entities e ${visibleMentions('$7')}
      WHERE e.tenant_id = $1 AND e.memory_id = $2
        AND ($3::text IS NULL OR e.kind = $3)
        AND ($4::text IS NULL OR e.entity_key > $4)
        AND ($5::text IS NULL OR EXISTS (
              SELECT 1 FROM graph.entity_mentions dm
               WHERE dm.tenant_id = e.tenant_id AND dm.memory_id = e.memory_id AND dm.entity_key = e.entity_key AND dm.doc_id = $5))
      ORDER BY e.entity_key
      LIMIT $6`,
    [tenantId, memoryId, f.kind ?? null, f.after ?? null, f.docId ?? null, f.limit, f.groups],
  );
  return r.rows.map(toRow);
}

/** One entity by its id, or null when it does not exist in this memory or no document the caller sees names it. */
export async function getEntity(sql: Sql, tenantId: string, memoryId: string, entityId: string, groups: readonly number[] | null): Promise<EntityRow | null> {
  const r = await sql.query<Raw>(
    `SELECT e.entity_id, e.entity_key, e.name, e.kind, v.mention_count, v.document_count, e.created_at
       FROM graph.entities e ${visibleMentions('$4')}
      WHERE e.tenant_id = $1 AND e.memory_id = $2 AND e.entity_id = $3`,
    [tenantId, memoryId, entityId, groups],
  );
  return r.rows[0] ? toRow(r.rows[0]) : null;
}

/** The documents (the caller sees) that mention an entity, most mentions first, at most `limit`. */
export async function entityDocuments(
  sql: Sql,
  tenantId: string,
  memoryId: string,
  entityKey: string,
  groups: readonly number[] | null,
  limit: number,
): Promise<EntityMentionRow[]> {
  const r = await sql.query<EntityMentionRow>(
    `SELECT m.doc_id, d.title, m.mentions
       FROM graph.entity_mentions m
       JOIN graph.documents d ON d.tenant_id = m.tenant_id AND d.doc_id = m.doc_id
      WHERE m.tenant_id = $1 AND m.memory_id = $2 AND m.entity_key = $3 AND ${visibleTo('d.', '$4')}
      ORDER BY m.mentions DESC, m.doc_id
      LIMIT $5`,
    [tenantId, memoryId, entityKey, groups, limit],
  );
  return r.rows;
}
