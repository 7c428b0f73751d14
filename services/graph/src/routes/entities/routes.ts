import type { EntityDetail, MemoryEntity } from '../../application/entities';
import type { MemoryScope } from '../../application/context';
import { KEY, MEMORY_PREFIX, err, route, type MemoryGuard } from '../route';
import { EntityDetailSchema, EntityListSchema, ListEntitiesQuery, decodeEntityCursor, presentEntityDetail, presentEntityPage } from './schema';

export interface EntityRouteDeps {
  guard: MemoryGuard;
  entities: {
    list: (scope: MemoryScope, filter: { kind?: string; docId?: string; after?: string; limit: number }) => Promise<MemoryEntity[]>;
    get: (scope: MemoryScope, entityId: string) => Promise<EntityDetail>;
  };
}

/** The entities memory ingest found in the memory's documents (`memory.entity.created`), one memory at a time. */
export function entityRoutes(deps: EntityRouteDeps) {
  const tags = ['entities'];
  return [
    route({
      method: 'get', path: `${MEMORY_PREFIX}/entities`, operationId: 'listEntities', summary: 'List the memory\'s entities, in name order', tags,
      security: KEY, guards: [deps.guard('read')],
      query: ListEntitiesQuery,
      ok: { status: 200, description: 'a page of entities', schema: EntityListSchema },
      responses: { 400: err('invalid query or cursor (every issue listed in `error.details`)') },
      handler: async (ctx, { query }) => {
        const entities = await deps.entities.list(ctx.state.scope, {
          kind: query.kind,
          docId: query.doc_id,
          after: query.cursor ? decodeEntityCursor(query.cursor) : undefined,
          limit: query.limit,
        });
        return presentEntityPage(entities, query.limit);
      },
    }),
    route({
      method: 'get', path: `${MEMORY_PREFIX}/entities/:entity_id`, operationId: 'getEntity', summary: 'An entity and the documents that mention it', tags,
      security: KEY, guards: [deps.guard('read')],
      ok: { status: 200, description: 'the entity', schema: EntityDetailSchema },
      handler: async (ctx, { params }) => presentEntityDetail(await deps.entities.get(ctx.state.scope, params.entity_id ?? '')),
    }),
  ];
}
