import { z } from 'zod';
import { cap, defineTool, jsonObject, seg, str } from './define';

/** People search (spec 3's tool table), wrapping the agents service's /people-search routes (docs/agents.md). */
export const peopleSearchTools = [
  defineTool({
    name: 'start_people_search',
    description: 'Start a people search from a natural-language prompt; returns the thread_id to poll.',
    input: z.object({ prompt: str('who to find', 4000) }),
    access: 'write',
    module: 'agents',
    call: (a, up) => up.post('agentCore', '/people-search/start', { prompt: a.prompt }),
  }),
  defineTool({
    name: 'continue_people_search',
    description: 'Continue a people search toward a larger total_target (more than the rows already found).',
    input: z.object({ thread_id: str('the search thread', 512), total_target: cap('record count to aim for', 1000) }),
    access: 'write',
    module: 'agents',
    call: (a, up) => up.post('agentCore', '/people-search/continue', { thread_id: a.thread_id, total_target: a.total_target }),
  }),
  defineTool({
    name: 'get_status_people_search',
    description: 'The snapshot of a people search: criteria, result table, counters, status.',
    input: z.object({ workflow_id: str('the search thread id', 512) }),
    access: 'read',
    module: 'agents',
    call: (a, up) => up.get('agentCore', `/people-search/status/${seg(a.workflow_id)}`),
  }),
  defineTool({
    name: 'stop_people_search',
    description: 'Stop a running people search (rows found so far are kept).',
    input: z.object({ workflow_id: str('the search thread id', 512) }),
    access: 'write',
    annotations: { destructiveHint: true },
    module: 'agents',
    call: (a, up) => up.post('agentCore', `/people-search/stop/${seg(a.workflow_id)}`),
  }),
  defineTool({
    name: 'people_database_search',
    description: 'Search the tenant\'s people directory with an Atlas-style filter ({"title": {"$regex": "^cto", "$options": "i"}}).',
    input: z.object({
      filter: jsonObject('Atlas-style field-path filter').optional(),
      limit: cap('records per page', 100).optional(),
      offset: z.number().int().min(0).max(100_000).optional().describe('records to skip'),
    }),
    access: 'read',
    module: 'agents',
    call: (a, up) => up.post('agentCore', '/people-search/database-search', { filter: a.filter ?? {}, limit: a.limit, offset: a.offset }),
  }),
];
