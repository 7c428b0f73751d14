import { z } from 'zod';
import { cap, defineTool, jsonObject, seg, str } from './define';

/** The names spec 3's tool table gives one search kind's workflow tools. */
interface SearchToolNames {
  start: string;
  continue: string;
  status: string;
  stop: string;
  databaseSearch: string;
}

/**
 * One search kind's workflow tools (start, continue, status, stop) and its directory search, wrapping the agents
 * service's `/<kind>-search` routes (docs/agents.md): company and people search differ only in names and paths.
 */
function searchTools(path: '/company-search' | '/people-search', what: string, names: SearchToolNames, filterExample: string) {
  return [
    defineTool({
      name: names.start,
      description: `Start a ${what} search from a natural-language prompt; returns the thread_id to poll.`,
      input: z.object({ prompt: str(what === 'company' ? 'what companies to find' : 'who to find', 4000) }),
      access: 'write',
      module: 'agents',
      call: (a, up) => up.post('agentCore', `${path}/start`, { prompt: a.prompt }),
    }),
    defineTool({
      name: names.continue,
      description: `Continue a ${what} search toward a larger total_target (more than the rows already found).`,
      input: z.object({ thread_id: str('the search thread', 512), total_target: cap('record count to aim for', 1000) }),
      access: 'write',
      module: 'agents',
      call: (a, up) => up.post('agentCore', `${path}/continue`, { thread_id: a.thread_id, total_target: a.total_target }),
    }),
    defineTool({
      name: names.status,
      description: `The snapshot of a ${what} search: criteria, result table, counters, status.`,
      input: z.object({ workflow_id: str('the search thread id', 512) }),
      access: 'read',
      module: 'agents',
      call: (a, up) => up.get('agentCore', `${path}/status/${seg(a.workflow_id)}`),
    }),
    defineTool({
      name: names.stop,
      description: `Stop a running ${what} search (rows found so far are kept).`,
      input: z.object({ workflow_id: str('the search thread id', 512) }),
      access: 'write',
      annotations: { destructiveHint: true },
      module: 'agents',
      call: (a, up) => up.post('agentCore', `${path}/stop/${seg(a.workflow_id)}`),
    }),
    defineTool({
      name: names.databaseSearch,
      description: `Search the tenant's ${what} directory with an Atlas-style filter (${filterExample}).`,
      input: z.object({
        filter: jsonObject('Atlas-style field-path filter').optional(),
        limit: cap('records per page', 100).optional(),
        offset: z.number().int().min(0).max(100_000).optional().describe('records to skip'),
      }),
      access: 'read',
      module: 'agents',
      call: (a, up) => up.post('agentCore', `${path}/database-search`, { filter: a.filter ?? {}, limit: a.limit, offset: a.offset }),
    }),
  ];
}

/** Company search (spec 3's tool table), wrapping the agents service's /company-search routes (docs/agents.md). */
export const companySearchTools = [
  ...searchTools('/company-search', 'company', { start: 'start_workflow', continue: 'continue_workflow', status: 'get_status_workflows', stop: 'stop', databaseSearch: 'company_database_search' }, '{"location.country": "DE", "employees": {"$gte": 50}}'),
  defineTool({
    name: 'start_enrichment',
    description: 'Enrich one column of a company search\'s list (enrichment_type e.g. custom or contacts).',
    input: z.object({
      thread_id: str('the search thread', 512),
      list_id: str('the list the thread filled', 512),
      column_name: str('the column to fill', 100),
      enrichment_type: str('custom, contacts, ...', 32),
      instruction: str('what to write in the column', 2000).optional(),
    }),
    access: 'write',
    module: 'agents',
    call: (a, up) =>
      up.post('agentCore', '/company-search/start-enrichment', {
        thread_id: a.thread_id,
        list_id: a.list_id,
        column_name: a.column_name,
        enrichment_type: a.enrichment_type,
        instruction: a.instruction ?? '',
        data_type: 'company',
      }),
  }),
  defineTool({
    name: 'stop_enrichment',
    description: 'Stop the enrichment running on a company search.',
    input: z.object({ workflow_id: str('the search thread id', 512) }),
    access: 'write',
    annotations: { destructiveHint: true },
    module: 'agents',
    call: (a, up) => up.post('agentCore', `/company-search/stop-enrichment/${seg(a.workflow_id)}`),
  }),
  defineTool({
    name: 'get_lists',
    description: 'The saved lists (company, people and imported), newest first, first 50.',
    input: z.object({}),
    access: 'read',
    module: 'agents',
    call: (_a, up) => up.get('agentCore', '/company-search/getLists'),
  }),
  defineTool({
    name: 'get_search_results',
    description: 'The result rows of a company or people search.',
    input: z.object({ thread_id: str('the search thread', 512) }),
    access: 'read',
    module: 'agents',
    call: (a, up) => up.get('agentCore', `/company-search/getSearchResult/${seg(a.thread_id)}`),
  }),
];

/** People search (spec 3's tool table), wrapping the agents service's /people-search routes (docs/agents.md). */
export const peopleSearchTools = searchTools(
  '/people-search',
  'people',
  { start: 'start_people_search', continue: 'continue_people_search', status: 'get_status_people_search', stop: 'stop_people_search', databaseSearch: 'people_database_search' },
  '{"title": {"$regex": "^cto", "$options": "i"}}',
);
