import type { Principal } from '../../application/principal';
import type { EnrichmentInput, EnrichmentTask, SavedListRow, SearchView, StartInput } from '../../application/workflows';
import { SESSION_KINDS } from '../../application/sessions/agent';
import { SEARCH_KINDS, type SearchKind } from '../../domain/workflow';
import { AGENTS_SECURITY, FAMILY, route, type AgentsGuard } from '../route';

/** The workflows whose rows getSearchResult gives: searches, and sessions (their list stores what they found). */
const RESULT_KINDS: readonly string[] = [...SEARCH_KINDS, ...SESSION_KINDS];
import {
  continueBody,
  continueView,
  enrichmentBody,
  enrichmentView,
  listsQuery,
  listsView,
  presentLists,
  presentSearchResult,
  presentSnapshot,
  searchResultView,
  snapshotView,
  startBody,
  startView,
  stopView,
  taskParams,
  threadParams,
} from './schema';

export interface SearchRouteDeps {
  guard: AgentsGuard;
  start(p: Principal, kind: SearchKind, input: StartInput): Promise<{ thread_id: string; status: string }>;
  continue(p: Principal, kind: SearchKind, threadId: string, totalTarget: number): Promise<{ thread_id: string; status: string }>;
  stop(p: Principal, kind: SearchKind, threadId: string): Promise<{ thread_id: string; status: string; message: string }>;
  /** A workflow's snapshot, of these kinds (a search's, or for a result also a session's). */
  view(p: Principal, kinds: readonly string[], threadId: string): Promise<SearchView>;
  startEnrichment(p: Principal, kind: SearchKind, threadId: string, input: EnrichmentInput): Promise<EnrichmentTask>;
  stopEnrichment(p: Principal, kind: SearchKind, threadId: string): Promise<EnrichmentTask>;
  lists(p: Principal, page: { limit: number; offset: number }): Promise<{ lists: SavedListRow[]; total: number }>;
}

const family = FAMILY.envelope;
const notFound = { 404: family.error('no such workflow of the caller (another tenant\'s is not found either)') };
const refused = (what: string) => ({ 422: { description: `invalid input: body (a); ${what}: body (b)`, schema: family.invalidView } });

/**
 * Spec 3's company search and people search routes (envelope family): start, continue, status, stop, enrichment of
 * a column, saved lists and a search's result. People lists and results are read through the company-search routes.
 */
export function searchRoutes(deps: SearchRouteDeps) {
  const common = { security: AGENTS_SECURITY, invalid: family.invalid, unreadable: family.unreadable };
  const forKind = (kind: SearchKind, base: string, what: string, tag: string, statusParam: 'task_id' | 'thread_id') => [
    route({
      ...common,
      method: 'post',
      path: `${base}/start`,
      operationId: `${tag}Start`,
      summary: `Start a ${what} search from a prompt`,
      description: 'Answers at once with status `processing`; the agents worker extracts criteria, collects and enriches rows in the background (poll the status route).',
      tags: [tag],
      guards: deps.guard('write', 'envelope'),
      body: startBody,
      ok: { status: 200, description: 'the workflow started', schema: startView },
      handler: async (ctx, { body }) => {
        const r = await deps.start(ctx.state.principal, kind, body);
        return { success: true, message: `${what} search started`, thread_id: r.thread_id, status: r.status };
      },
    }),
    route({
      ...common,
      method: 'post',
      path: `${base}/continue`,
      operationId: `${tag}Continue`,
      summary: `Continue a ${what} search toward a larger target`,
      description: '`total_target` (1 to 1,000) must exceed the rows already found, else 422 body (b). Status `continuing`.',
      tags: [tag],
      guards: deps.guard('write', 'envelope'),
      body: continueBody,
      ok: { status: 200, description: 'the workflow continues', schema: continueView },
      responses: { ...notFound, ...refused('a target not above the rows found, or a workflow still stopping') },
      handler: async (ctx, { body }) => ({ success: true, ...(await deps.continue(ctx.state.principal, kind, body.thread_id, body.total_target)) }),
    }),
    route({
      ...common,
      method: 'get',
      path: `${base}/status/:${statusParam}`,
      operationId: `${tag}Status`,
      summary: `The ${what} search's snapshot`,
      description: 'Every field of spec 3\'s workflow snapshot, plus `status`, and `sources` and `notes` in `table_structure` (docs/agents.md).',
      tags: [tag],
      guards: deps.guard('read', 'envelope'),
      params: statusParam === 'task_id' ? taskParams : threadParams,
      ok: { status: 200, description: 'the snapshot', schema: snapshotView },
      responses: notFound,
      handler: async (ctx, { params }) => presentSnapshot(await deps.view(ctx.state.principal, [kind], 'task_id' in params ? params.task_id : params.thread_id)),
    }),
    route({
      ...common,
      method: 'post',
      path: `${base}/stop/:thread_id`,
      operationId: `${tag}Stop`,
      summary: `Stop a ${what} search`,
      description: 'Status `stopping`; the worker ends the run within about a second and marks it `stopped`. A workflow that already ended answers its status.',
      tags: [tag],
      guards: deps.guard('write', 'envelope'),
      params: threadParams,
      ok: { status: 200, description: 'the stop was asked for', schema: stopView },
      responses: notFound,
      handler: async (ctx, { params }) => ({ success: true, ...(await deps.stop(ctx.state.principal, kind, params.thread_id)) }),
    }),
    route({
      ...common,
      method: 'post',
      path: `${base}/start-enrichment`,
      operationId: `${tag}StartEnrichment`,
      summary: `Fill a new column of a ${what} list for every row`,
      description: '`enrichment_type` `custom` (with an `instruction`) or `contacts`; every cell gets its source in `metadata`, or status `error` when no source gives it.',
      tags: [tag],
      guards: deps.guard('write', 'envelope'),
      body: enrichmentBody,
      ok: { status: 200, description: 'the enrichment task', schema: enrichmentView },
      responses: { ...notFound, ...refused('an unknown enrichment type, a custom one without instruction, a workflow still stopping') },
      handler: async (ctx, { body }) => ({ success: true, ...(await deps.startEnrichment(ctx.state.principal, kind, body.thread_id, body)) }),
    }),
    route({
      ...common,
      method: 'post',
      path: `${base}/stop-enrichment/:thread_id`,
      operationId: `${tag}StopEnrichment`,
      summary: `Stop the enrichment of a ${what} list`,
      tags: [tag],
      guards: deps.guard('write', 'envelope'),
      params: threadParams,
      ok: { status: 200, description: 'the enrichment task', schema: enrichmentView },
      responses: notFound,
      handler: async (ctx, { params }) => ({ success: true, ...(await deps.stopEnrichment(ctx.state.principal, kind, params.thread_id)) }),
    }),
  ];
  return [
    ...forKind('company_search', '/company-search', 'company', 'companySearch', 'task_id'),
    route({
      ...common,
      method: 'get',
      path: '/company-search/getLists',
      operationId: 'companySearchGetLists',
      summary: 'Saved lists (company, people and imported), newest first',
      tags: ['companySearch'],
      guards: deps.guard('read', 'envelope'),
      query: listsQuery,
      ok: { status: 200, description: 'one page of lists and how many there are', schema: listsView },
      handler: async (ctx, { query }) => presentLists(await deps.lists(ctx.state.principal, query)),
    }),
    route({
      ...common,
      method: 'get',
      path: '/company-search/getSearchResult/:thread_id',
      operationId: 'companySearchGetSearchResult',
      summary: 'The rows a company or people search, or a deep search, web research or crawler session found',
      tags: ['companySearch'],
      guards: deps.guard('read', 'envelope'),
      params: threadParams,
      ok: { status: 200, description: 'the result', schema: searchResultView },
      responses: notFound,
      // A search's rows, and a deep search, web research or crawler session's (spec 3: their list stores the results).
      handler: async (ctx, { params }) => presentSearchResult(await deps.view(ctx.state.principal, RESULT_KINDS, params.thread_id)),
    }),
    ...forKind('people_search', '/people-search', 'people', 'peopleSearch', 'thread_id'),
  ];
}
