import { AppError, queryInteger } from '@lore/runtime';
import { z } from 'zod';
import type { EntityDetail, MemoryEntity } from '../../application/entities';
import { ENTITY_KINDS, NODE_LABELS } from '../../domain/entity-model';

export const EntitySchema = z.object({
  entity_id: z.string().describe('the id `memory.entity.created` carried'),
  name: z.string().describe('the name as first written'),
  kind: z.enum(ENTITY_KINDS),
  label: z.enum(NODE_LABELS).nullable().describe('the knowledge-graph node label this kind maps to (null for a concept)'),
  mention_count: z.number().int().describe('mentions in the documents the caller sees'),
  document_count: z.number().int().describe('documents the caller sees that mention it'),
  created_at: z.string(),
});

export const EntityListSchema = z.object({ entities: z.array(EntitySchema), count: z.number().int(), next_cursor: z.string().nullable() });

export const EntityDetailSchema = EntitySchema.extend({
  documents: z
    .array(z.object({ doc_id: z.string(), title: z.string(), mentions: z.number().int() }))
    .describe('the documents that mention it, most mentions first (at most 50)'),
});

export const ListEntitiesQuery = z.object({
  kind: z.enum(ENTITY_KINDS).optional(),
  doc_id: z.string().min(1).max(64).optional().describe('only the entities this document mentions'),
  limit: queryInteger('limit', { min: 1, max: 200, default: 50 }),
  cursor: z.string().max(400).optional(),
});

/** Opaque keyset cursor: base64url of the last entity's key. */
export function encodeEntityCursor(entityKey: string): string {
  return Buffer.from(entityKey, 'utf8').toString('base64url');
}

export function decodeEntityCursor(cursor: string): string {
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!key || key.includes('\u0000') || key.includes('\ufffd') || encodeEntityCursor(key) !== cursor) throw AppError.badRequest('cursor is invalid');
  return key;
}

export function presentEntity(e: MemoryEntity): z.input<typeof EntitySchema> {
  return {
    entity_id: e.entity_id,
    name: e.name,
    kind: (ENTITY_KINDS as readonly string[]).includes(e.kind) ? (e.kind as (typeof ENTITY_KINDS)[number]) : 'concept',
    label: e.label,
    mention_count: e.mention_count,
    document_count: e.document_count,
    created_at: e.created_at,
  };
}

/** A page of entities in key order, with the cursor of the next page when this one is full. */
export function presentEntityPage(entities: MemoryEntity[], limit: number): z.input<typeof EntityListSchema> {
  const last = entities[entities.length - 1];
  return { entities: entities.map(presentEntity), count: entities.length, next_cursor: entities.length === limit && last ? encodeEntityCursor(last.entity_key) : null };
}

export function presentEntityDetail(e: EntityDetail): z.input<typeof EntityDetailSchema> {
  return { ...presentEntity(e), documents: e.documents.map((d) => ({ doc_id: d.doc_id, title: d.title, mentions: d.mentions })) };
}
