import type { MemoryScope } from '../../application/context';
import type { Resolution } from '../../application/governance';
import type { ContradictionView } from '../../store/governance';
import { KEY, MEMORY_PREFIX, READ_ONLY, err, route, type MemoryGuard } from '../route';
import { ContradictionListSchema, ContradictionSchema, ContradictionsQuery, ResolveBody, presentContradiction } from './schema';

export interface ContradictionRouteDeps {
  guard: MemoryGuard;
  contradictions: {
    list: (scope: MemoryScope, status: 'open' | 'resolved' | undefined, limit: number) => Promise<ContradictionView[]>;
    resolve: (scope: MemoryScope, id: string, resolution: Resolution, note: string | null) => Promise<ContradictionView>;
  };
}

/** Disagreements between sources, each with both sides, and the resolve action. */
export function contradictionRoutes(deps: ContradictionRouteDeps) {
  const tags = ['contradictions'];
  return [
    route({
      method: 'get', path: `${MEMORY_PREFIX}/contradictions`, operationId: 'listContradictions', summary: 'Contradictions between sources', tags,
      security: KEY, guards: [deps.guard('read')],
      query: ContradictionsQuery,
      ok: { status: 200, description: 'contradictions, newest first', schema: ContradictionListSchema },
      responses: { 400: err('invalid query (every issue listed in `error.details`)') },
      handler: async (ctx, { query }) => {
        const items = await deps.contradictions.list(ctx.state.scope, query.status, query.limit);
        return { contradictions: items.map(presentContradiction), count: items.length };
      },
    }),
    route({
      method: 'post', path: `${MEMORY_PREFIX}/contradictions/:contradiction_id/resolve`, operationId: 'resolveContradiction', summary: 'Resolve a contradiction', tags,
      security: KEY, guards: [deps.guard('write')],
      body: ResolveBody,
      ok: { status: 200, description: 'the contradiction, resolved', schema: ContradictionSchema },
      responses: { ...READ_ONLY, 409: err('already resolved') },
      handler: async (ctx, { params, body }) =>
        presentContradiction(await deps.contradictions.resolve(ctx.state.scope, params.contradiction_id ?? '', body.resolution, body.note ?? null)),
    }),
  ];
}
