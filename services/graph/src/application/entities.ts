import { AppError } from '@lore/runtime';
import { labelOfKind, type NodeLabel } from '../domain/entity-model';
import { getDocument } from '../store/documents';
import { entityDocuments, getEntity, listEntities, type EntityMentionRow, type EntityRow } from '../store/entities';
import { visibleGroups, type MemoryDeps, type MemoryScope } from './context';

/** A memory entity with the knowledge-graph label its kind maps to (the shared entity model). */
export interface MemoryEntity extends EntityRow {
  label: NodeLabel | null;
}

export interface EntityDetail extends MemoryEntity {
  documents: EntityMentionRow[];
}

/** How many documents an entity's detail lists (those with the most mentions). */
export const ENTITY_DOCUMENTS_LIMIT = 50;

const withLabel = (e: EntityRow): MemoryEntity => ({ ...e, label: labelOfKind(e.kind) });

/**
 * A page of the memory's entities, in key order. With `docId`, only those that document mentions; a document the
 * caller cannot see (another tenant's, or a private one outside its groups) is 404 like elsewhere.
 */
export async function entitiesOf(
  deps: MemoryDeps,
  scope: MemoryScope,
  filter: { kind?: string; docId?: string; after?: string; limit: number },
): Promise<MemoryEntity[]> {
  const groups = visibleGroups(scope);
  const rows = await deps.db.withTenant(scope.tenantId, async (sql) => {
    if (filter.docId && !(await getDocument(sql, scope.tenantId, scope.memoryId, filter.docId, groups))) throw AppError.notFound('document');
    return listEntities(sql, scope.tenantId, scope.memoryId, { ...filter, groups });
  });
  return rows.map(withLabel);
}

/** One entity and the documents that mention it; 404 when no document the caller sees names it. */
export async function entityOf(deps: MemoryDeps, scope: MemoryScope, entityId: string): Promise<EntityDetail> {
  const groups = visibleGroups(scope);
  const found = await deps.db.withTenant(scope.tenantId, async (sql) => {
    const entity = await getEntity(sql, scope.tenantId, scope.memoryId, entityId, groups);
    if (!entity) return null;
    return { ...withLabel(entity), documents: await entityDocuments(sql, scope.tenantId, scope.memoryId, entity.entity_key, groups, ENTITY_DOCUMENTS_LIMIT) };
  });
  if (!found) throw AppError.notFound('entity');
  return found;
}
