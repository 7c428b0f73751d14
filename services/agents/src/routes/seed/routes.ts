import type { Principal } from '../../application/principal';
import type { SeedRun } from '../../application/seed';
import type { SeedType } from '../../domain/seed';
import type { SeedStatusRow } from '../../store/seed';
import { AGENTS_SECURITY, FAMILY, route, type AgentsGuard } from '../route';
import { clearQuery, presentSeedRun, presentSeedStatus, seedClearView, seedRunView, seedStatusView, statusQuery } from './schema';

export interface SeedRouteDeps {
  guard: AgentsGuard;
  start(p: Principal, type: SeedType): Promise<SeedRun>;
  statuses(p: Principal, type: SeedType | null): Promise<{ summary: Record<string, number>; statuses: SeedStatusRow[] }>;
  clear(p: Principal, type: SeedType | null, all: boolean): Promise<{ deleted_keys: string[] }>;
}

const detail = FAMILY.detail;

/** Spec 3's seed routes (detail family): seed a tenant's lists from the fixed suggestion prompts (docs/agents.md, "Seed"). */
export function seedRoutes(deps: SeedRouteDeps) {
  const common = { security: AGENTS_SECURITY, invalid: detail.invalid, unreadable: detail.unreadable, tags: ['seed'] };
  return [
    // Spec 3 names the two paths; each is its own operation.
    ...(['company', 'people'] as const).map((type) =>
      route({
        ...common,
        method: 'post',
        path: `/api/seed/start/${type}`,
        operationId: type === 'company' ? 'seedStartCompany' : 'seedStartPeople',
        summary: `Seed the tenant's lists from the ${type} suggestion prompts`,
        description:
          'Each prompt in turn: start a workflow, take its list_id from the workflow\'s stream, store it against the prompt, continue the workflow. An item already completed is reported `skipped`; a failed one is tried again by the next start.',
        guards: deps.guard('write', 'detail'),
        ok: { status: 200, description: 'what the start did, item by item', schema: seedRunView },
        handler: async (ctx) => presentSeedRun(await deps.start(ctx.state.principal, type)),
      }),
    ),
    route({
      ...common,
      method: 'get',
      path: '/api/seed/status',
      operationId: 'seedStatus',
      summary: 'The tenant\'s seed statuses',
      description: '`seed_type` `company` or `people` (absent: both). A summary of counters by status, and every item.',
      guards: deps.guard('read', 'detail'),
      query: statusQuery,
      ok: { status: 200, description: 'the statuses', schema: seedStatusView },
      handler: async (ctx, { query }) => presentSeedStatus((await deps.statuses(ctx.state.principal, query.seed_type ?? null)) as Parameters<typeof presentSeedStatus>[0]),
    }),
    route({
      ...common,
      method: 'delete',
      path: '/api/seed/status',
      operationId: 'seedClear',
      summary: 'Clear seed statuses',
      description: '`seed_type` `company`, `people` or `all` (default); `clear_all` `true` clears every status, else (default) only completed ones. A cleared prompt is seeded again by the next start. Workflows and lists stay.',
      guards: deps.guard('write', 'detail'),
      query: clearQuery,
      ok: { status: 200, description: 'what was cleared', schema: seedClearView },
      handler: async (ctx, { query }) => {
        const type = query.seed_type === 'all' ? null : query.seed_type;
        const r = await deps.clear(ctx.state.principal, type, query.clear_all);
        return {
          success: true,
          message: `cleared ${r.deleted_keys.length} ${query.clear_all ? '' : 'completed '}seed status${r.deleted_keys.length === 1 ? '' : 'es'} (${query.seed_type})`,
          deleted_count: r.deleted_keys.length,
          cleared_type: query.seed_type,
          deleted_keys: r.deleted_keys,
        };
      },
    }),
  ];
}
