import { z } from 'zod';
import { cap, defineTool, seg, str } from './define';

/** The serviceId research runs started through the MCP server carry (spec 3: used for credit checking). */
export const MCP_SERVICE_ID = 'mcp';

/** Deep research (spec 3's tool table), wrapping the agents service's /research routes (docs/agents.md). */
export const researchTools = [
  defineTool({
    name: 'get_active_workflow',
    description: 'The caller\'s research runs still running or waiting for a clarification, newest first.',
    input: z.object({}),
    access: 'read',
    module: 'agents',
    call: (_a, up) => up.get('agentCore', '/research/active'),
  }),
  defineTool({
    name: 'start_research',
    description: 'Start a deep research run; poll get_result_of_search with the returned thread_id for the brief and final report.',
    input: z.object({
      query: str('the research question', 4000),
      allow_clarification: z.boolean().optional().describe('let the run ask one clarifying question first (default false)'),
      max_concurrent_research_units: cap('research units at once (default 5)', 20).optional(),
      max_researcher_iterations: cap('iterations per researcher (default 3)', 10).optional(),
    }),
    access: 'write',
    module: 'agents',
    call: (a, up) =>
      up.post('agentCore', '/research/start', {
        query: a.query,
        allow_clarification: a.allow_clarification ?? false,
        max_concurrent_research_units: a.max_concurrent_research_units,
        max_researcher_iterations: a.max_researcher_iterations,
        serviceId: MCP_SERVICE_ID,
      }),
  }),
  defineTool({
    name: 'get_result_of_search',
    description: 'The status of a research run, with its brief and final report once complete.',
    input: z.object({ research_id: str('the research thread_id', 512) }),
    access: 'read',
    module: 'agents',
    call: (a, up) => up.get('agentCore', `/research/status/${seg(a.research_id)}`),
  }),
];
