/**
 * The MCP server's company-search, people-search and research tools (issue 16), one suite for both run modes
 * (mcp-embedded.int.test.ts, mcp.int.test.ts): the SDK's own client over Streamable HTTP to the gateway in front of
 * the tool server, each tool calling the agents routes back through the gateway with the caller's key.
 *
 * - `TOOL_CASES`: every tool once with valid arguments (the answer's `data` checked field by field) and once with
 *   arguments the tool's schema or the API refuses (`success: false`, a message naming the tool and the argument or
 *   the API's own words, never a stack trace: `McpClient.call` checks that on every failure).
 * - Keys: none, a wrong one, a read-only one, a write-only one, one scoped to the memory module only, one scoped to
 *   the agents module.
 * - Concurrent sessions of one key, each its own; the per-key session limit; another key's session id.
 * - A tool server whose upstream is a closed port: every tool answers `upstream unreachable`.
 *
 * See "Tools of company search, people search and research" and "Authentication" in docs/mcp.md.
 */
import { randomBytes } from 'node:crypto';
import { upsertDirectoryRecords, type DirectoryInput } from '@lore/agents';
import type { Db } from '@lore/runtime';
import { allTools } from '@lore/mcp';
import { READ_TOOLS, SEARCH_TOOLS, connectMcp, rawInitialize, startDeadUpstreamMcp, type McpClient } from './client';

/** Where the suite runs: the public address (the gateway in front of the tool server) and one tenant's keys. */
export interface SearchToolsTarget {
  url: string;
  /** A key of the tenant with every scope. */
  key: string;
  /** Another key of the same tenant, with these scopes (`{}`: every scope). */
  newKey(scopes?: { access?: 'read' | 'write' | 'read_write'; modules?: string[] }): Promise<string>;
  /** The tenant's directory, written as CSV imports and finished lists write it. */
  db: Db;
  tenantId: string;
  /** The tool server's per-key session limit in this mode. */
  sessionsPerKey: number;
}

/** What the cases share: ids one tool's answer gives and a later tool is called with. */
interface Ctx {
  /** A marker in this run's directory records (the tenant's directory may hold other runs' records). */
  marker: string;
  company: string;
  companyList: string;
  people: string;
  research: string;
}

type Args = Record<string, unknown>;
type Call = (name: string, args?: Args) => Promise<{ success: boolean; data?: any; error?: string }>;

interface ToolCase {
  tool: string;
  valid: (c: Ctx) => Args;
  /** Checks `data` of the valid call; may keep ids in the context, or call another tool. */
  check: (data: any, c: Ctx, call: Call) => void | Promise<void>;
  invalid: (c: Ctx) => Args;
  /** The whole of the refusal's message, as a pattern. */
  error: RegExp;
}

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
/** The SDK's refusal of arguments that break a tool's schema, naming the tool and the argument (docs/mcp.md, "Answers"). */
const schemaError = (tool: string, detail: string) => new RegExp(`^Input validation error: Invalid arguments for tool ${tool}: ${detail}$`);
const atArg = (tool: string, arg: string) => schemaError(tool, `[^\\n]+ at ${arg}`);
const WORKFLOW_STATUSES = /^(processing|continuing|stopping|stopped|completed|error)$/;
const RESEARCH_ACTIVE = /^(processing|continuing|stopping|awaiting_clarification)$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

const COMPANY = (m: string): Args => ({ name: `Harbourline Logistics ${m}`, domain: `harbourline-${m}.example`, industry: 'Logistics', employees: 240, location: { city: 'Rotterdam', country: 'NL' } });
const PERSON = (m: string): Args => ({ name: `Ada Quay ${m}`, title: 'Head of Logistics', company: `Harbourline Logistics ${m}`, location: { country: 'NL' } });

/** A snapshot of a search (the status tools), whatever step the worker has reached. */
function checkSnapshot(data: any, thread: string): void {
  expect(data).toMatchObject({
    success: expect.any(Boolean),
    thread_id: thread,
    status: expect.stringMatching(WORKFLOW_STATUSES),
    current_step: expect.any(String),
    criteria: expect.any(Array),
    total_target: expect.any(Number),
    table_structure: { columns: expect.any(Array), rows: expect.any(Array), current_count: expect.any(Number), sources: expect.any(Array), notes: expect.any(Array) },
    all_companies: expect.any(Array),
    title: expect.any(String),
  });
  expect(data.table_structure.current_count).toBe(data.table_structure.rows.length);
}

/** Each tool once valid and once refused, in an order where a tool finds the ids earlier ones made. */
export const TOOL_CASES: ToolCase[] = [
  // Company search.
  {
    tool: 'start_workflow',
    valid: () => ({ prompt: 'logistics companies in Rotterdam' }),
    check: (d, c) => {
      expect(d).toEqual({ success: true, message: 'company search started', thread_id: expect.any(String), status: 'processing' });
      c.company = d.thread_id;
    },
    invalid: () => ({ prompt: '' }),
    error: atArg('start_workflow', 'prompt'),
  },
  {
    tool: 'get_status_workflows',
    valid: (c) => ({ workflow_id: c.company }),
    check: (d, c) => checkSnapshot(d, c.company),
    invalid: () => ({ workflow_id: UNKNOWN_ID }),
    error: /^HTTP 404: workflow not found$/,
  },
  {
    tool: 'continue_workflow',
    valid: (c) => ({ thread_id: c.company, total_target: 40 }),
    check: (d, c) => expect(d).toEqual({ success: true, thread_id: c.company, status: 'continuing' }),
    invalid: (c) => ({ thread_id: c.company, total_target: 0 }),
    error: atArg('continue_workflow', 'total_target'),
  },
  {
    tool: 'get_lists',
    valid: () => ({}),
    check: (d, c) => {
      expect(d).toMatchObject({ success: true, total: expect.any(Number), data: expect.any(Array) });
      const list = (d.data as any[]).find((l) => l.listLinkID === c.company);
      expect(list).toMatchObject({ id: expect.any(String), listType: 'company_search', type: 'company', listStatus: expect.any(String), noOfRecords: expect.any(Number), createdAt: expect.stringMatching(ISO) });
      c.companyList = list.id;
    },
    invalid: () => ({ limit: 5 }),
    error: schemaError('get_lists', 'Unrecognized key: "limit"'),
  },
  {
    tool: 'start_enrichment',
    valid: (c) => ({ thread_id: c.company, list_id: c.companyList, column_name: 'CEO', enrichment_type: 'custom', instruction: 'the chief executive' }),
    check: (d, c) =>
      expect(d).toEqual({ success: true, thread_id: c.company, column_id: 'enrich_ceo', column_name: 'CEO', enrichment_type: 'custom', status: 'processing', message: 'the CEO column is being filled for every row' }),
    // Within the schema; the agents route refuses the type.
    invalid: (c) => ({ thread_id: c.company, list_id: c.companyList, column_name: 'CEO', enrichment_type: 'weather', instruction: 'x' }),
    error: /^HTTP 422: .*enrichment_type must be custom or contacts/,
  },
  {
    tool: 'get_search_results',
    valid: (c) => ({ thread_id: c.company }),
    check: (d, c) => {
      expect(d).toMatchObject({ thread_id: c.company, list_id: c.companyList, list_type: 'company_search', status: expect.stringMatching(WORKFLOW_STATUSES), total: expect.any(Number), data: expect.any(Array) });
      expect(d.total).toBe(d.data.length);
      // The enrichment column asked for above is part of the list.
      expect((d.columns as Array<{ id: string; header: string }>).find((x) => x.id === 'enrich_ceo')).toMatchObject({ header: 'CEO', type: 'enrichment' });
    },
    invalid: () => ({ thread_id: 42 }),
    error: atArg('get_search_results', 'thread_id'),
  },
  {
    tool: 'stop_enrichment',
    valid: (c) => ({ workflow_id: c.company }),
    check: (d, c) => {
      // The worker may have filled the column already (then nothing was running).
      expect(d).toMatchObject({ success: true, thread_id: c.company, status: 'stopped', message: expect.stringMatching(/^(stopped 1 enrichment column\(s\)|no enrichment was running)$/) });
      if (d.message.startsWith('stopped')) expect(d).toMatchObject({ column_id: 'enrich_ceo', column_name: 'CEO', enrichment_type: 'custom' });
    },
    invalid: () => ({ workflow_id: 'x'.repeat(513) }),
    error: atArg('stop_enrichment', 'workflow_id'),
  },
  {
    tool: 'company_database_search',
    valid: (c) => ({ filter: { name: `Harbourline Logistics ${c.marker}`, 'location.country': 'NL' }, limit: 5 }),
    check: (d, c) => {
      expect(d).toMatchObject({ success: true, count: 1, limit: 5, offset: 0 });
      expect(d.data).toEqual([{ ...COMPANY(c.marker), id: expect.stringMatching(/^[0-9a-f]{32}$/), source: 'csv:mcp-test', updated_at: expect.any(String) }]);
    },
    // Within the schema; the directory refuses the operator.
    invalid: () => ({ filter: { $where: 'this.employees > 1' } }),
    error: /^HTTP 422: .*unknown operator \$where/,
  },
  {
    tool: 'stop',
    valid: (c) => ({ workflow_id: c.company }),
    check: (d, c) => {
      expect(d).toMatchObject({ success: true, thread_id: c.company, status: expect.stringMatching(WORKFLOW_STATUSES), message: expect.any(String) });
      // A running search is asked to stop; one the worker already ended answers its status.
      expect(d.message).toBe(d.status === 'stopping' ? 'the workflow stops after the step in progress' : `the workflow has already ended (${d.status})`);
    },
    invalid: () => ({}),
    error: schemaError('stop', 'Invalid input: expected string, received undefined at workflow_id'),
  },
  // People search.
  {
    tool: 'start_people_search',
    valid: () => ({ prompt: 'heads of logistics in Rotterdam' }),
    check: (d, c) => {
      expect(d).toEqual({ success: true, message: 'people search started', thread_id: expect.any(String), status: 'processing' });
      c.people = d.thread_id;
    },
    invalid: () => ({}),
    error: schemaError('start_people_search', 'Invalid input: expected string, received undefined at prompt'),
  },
  {
    tool: 'get_status_people_search',
    valid: (c) => ({ workflow_id: c.people }),
    check: (d, c) => checkSnapshot(d, c.people),
    invalid: () => ({ workflow_id: '' }),
    error: atArg('get_status_people_search', 'workflow_id'),
  },
  {
    tool: 'continue_people_search',
    valid: (c) => ({ thread_id: c.people, total_target: 30 }),
    check: (d, c) => expect(d).toEqual({ success: true, thread_id: c.people, status: 'continuing' }),
    invalid: (c) => ({ thread_id: c.people, total_target: 2.5 }),
    error: schemaError('continue_people_search', 'Invalid input: expected int, received number at total_target'),
  },
  {
    tool: 'people_database_search',
    valid: (c) => ({ filter: { name: `Ada Quay ${c.marker}`, title: { $regex: '^head of', $options: 'i' } } }),
    check: (d, c) => {
      expect(d).toMatchObject({ success: true, count: 1, offset: 0 });
      expect(d.data).toEqual([{ ...PERSON(c.marker), id: expect.stringMatching(/^[0-9a-f]{32}$/), source: 'csv:mcp-test', updated_at: expect.any(String) }]);
    },
    invalid: () => ({ filter: 'title=cto' }),
    error: schemaError('people_database_search', 'Invalid input: expected record, received string at filter'),
  },
  {
    tool: 'stop_people_search',
    valid: (c) => ({ workflow_id: c.people }),
    check: (d, c) => expect(d).toMatchObject({ success: true, thread_id: c.people, status: expect.stringMatching(WORKFLOW_STATUSES), message: expect.any(String) }),
    invalid: () => ({ workflow_id: UNKNOWN_ID }),
    error: /^HTTP 404: workflow not found$/,
  },
  // Research.
  {
    tool: 'start_research',
    valid: () => ({ query: 'ports of the North Sea', max_researcher_iterations: 1, max_concurrent_research_units: 1 }),
    check: (d, c) => {
      expect(d).toEqual({ thread_id: expect.any(String), status: 'processing', message: 'research in progress', research_brief: '', final_report: '' });
      c.research = d.thread_id;
    },
    invalid: () => ({ query: 'ports', max_researcher_iterations: 11 }),
    error: atArg('start_research', 'max_researcher_iterations'),
  },
  {
    tool: 'get_active_workflow',
    valid: () => ({}),
    check: async (d, c, call) => {
      expect(d).toMatchObject({ success: true, count: d.workflows.length });
      for (const w of d.workflows) expect(w).toEqual({ thread_id: expect.any(String), status: expect.stringMatching(RESEARCH_ACTIVE), current_step: expect.any(String), query: expect.any(String), serviceId: expect.any(String), created_at: expect.stringMatching(ISO), updated_at: expect.stringMatching(ISO) });
      const mine = (d.workflows as any[]).find((w) => w.thread_id === c.research);
      if (mine) expect(mine).toMatchObject({ query: 'ports of the North Sea', serviceId: 'mcp' });
      else {
        // Not listed: the run had ended already (a worker ran it), so its status read now says so.
        const status = await call('get_result_of_search', { research_id: c.research });
        expect(status.data.status).not.toMatch(RESEARCH_ACTIVE);
      }
    },
    invalid: (c) => ({ research_id: c.research }),
    error: schemaError('get_active_workflow', 'Unrecognized key: "research_id"'),
  },
  {
    tool: 'get_result_of_search',
    valid: (c) => ({ research_id: c.research }),
    check: (d, c) =>
      expect(d).toMatchObject({
        success: expect.any(Boolean),
        thread_id: c.research,
        query: 'ports of the North Sea',
        serviceId: 'mcp',
        status: expect.any(String),
        max_researcher_iterations: 1,
        max_concurrent_research_units: 1,
        research_brief: expect.any(String),
        final_report: expect.any(String),
        sources: expect.any(Array),
        created_at: expect.stringMatching(ISO),
      }),
    invalid: () => ({ research_id: '' }),
    error: atArg('get_result_of_search', 'research_id'),
  },
];

/** Arguments every tool's schema takes, without ids from earlier calls (for keys that may not call, a dead upstream). */
export const MINIMAL_ARGS: Record<string, Args> = {
  start_workflow: { prompt: 'fintech companies in Berlin' }, continue_workflow: { thread_id: UNKNOWN_ID, total_target: 1 }, get_status_workflows: { workflow_id: UNKNOWN_ID },
  stop: { workflow_id: UNKNOWN_ID }, start_enrichment: { thread_id: UNKNOWN_ID, list_id: UNKNOWN_ID, column_name: 'ceo', enrichment_type: 'contacts' },
  stop_enrichment: { workflow_id: UNKNOWN_ID }, get_lists: {}, get_search_results: { thread_id: UNKNOWN_ID }, company_database_search: {},
  start_people_search: { prompt: 'CTOs of fintech companies in Berlin' }, continue_people_search: { thread_id: UNKNOWN_ID, total_target: 1 }, get_status_people_search: { workflow_id: UNKNOWN_ID },
  stop_people_search: { workflow_id: UNKNOWN_ID }, people_database_search: {}, get_active_workflow: {}, start_research: { query: 'ports of the North Sea' }, get_result_of_search: { research_id: UNKNOWN_ID },
};

export function describeSearchTools(mode: string, target: () => SearchToolsTarget): void {
  describe(`company search, people search and research tools (${mode})`, () => {
    const ctx = { marker: randomBytes(4).toString('hex') } as Ctx;
    let mcp: McpClient;
    beforeAll(async () => {
      const t = target();
      await upsertDirectoryRecords(t.db, t.tenantId, [
        { kind: 'company', data: COMPANY(ctx.marker), source: 'csv:mcp-test' },
        { kind: 'person', data: PERSON(ctx.marker), source: 'csv:mcp-test' },
      ] satisfies DirectoryInput[]);
      mcp = await connectMcp(t.url, t.key);
    });
    afterAll(async () => {
      await mcp?.close();
    });

    it('answers /health without a key, and refuses /mcp without a key or with a wrong one', async () => {
      const { url, key } = target();
      const health = await fetch(`${url}/health`);
      expect([health.status, await health.json()]).toEqual([200, { status: 'ok', service: 'mcp' }]);
      expect(await rawInitialize(url, {})).toMatchObject({ status: 401, json: { success: false, error: 'Missing x-api-key header' } });
      // A key of the right shape with a wrong secret, and one that is not a key: refused before any session.
      expect((await rawInitialize(url, { 'x-api-key': `${key.slice(0, -4)}${key.endsWith('abcd') ? 'dcba' : 'abcd'}` })).status).toBe(401);
      await expect(connectMcp(url, 'ck_live_not-a-key')).rejects.toThrow(/UNAUTHORIZED|401/);
    });

    it('lists every tool with its output schema, strict inputs and annotations', async () => {
      const { tools } = await mcp.client.listTools();
      expect(tools.map((x) => x.name).sort()).toEqual(allTools().map((x) => x.name).sort());
      for (const tool of tools.filter((x) => SEARCH_TOOLS.includes(x.name))) {
        expect(tool.outputSchema).toMatchObject({ type: 'object', properties: { success: { type: 'boolean' } } });
        expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
        expect(tool.annotations?.readOnlyHint).toBe(READ_TOOLS.includes(tool.name));
        expect(tool.annotations?.destructiveHint ?? false).toBe(['stop', 'stop_enrichment', 'stop_people_search'].includes(tool.name));
      }
      const start = tools.find((x) => x.name === 'start_workflow')!;
      expect(start.inputSchema).toMatchObject({ required: ['prompt'], properties: { prompt: { type: 'string', maxLength: 4000 } } });
      expect((start.inputSchema.properties as any).prompt.minLength).toBeGreaterThanOrEqual(1);
      expect(tools.find((x) => x.name === 'continue_workflow')!.inputSchema).toMatchObject({ properties: { total_target: { type: 'integer', minimum: 1, maximum: 1000 } } });
    });

    const valid = new Set<string>();
    const refused = new Set<string>();
    describe.each(TOOL_CASES.map((c) => [c.tool, c] as const))('%s', (_name, c) => {
      it('answers valid arguments with the API\'s data', async () => {
        const r = await mcp.call(c.tool, c.valid(ctx));
        if (!r.success) throw new Error(`${c.tool}: ${r.error}`);
        await c.check(r.data, ctx, (name, args) => mcp.call(name, args));
        valid.add(c.tool);
      });
      it('refuses invalid arguments with a clear message', async () => {
        const r = await mcp.call(c.tool, c.invalid(ctx));
        expect(r).toEqual({ success: false, error: expect.stringMatching(c.error) });
        refused.add(c.tool);
      });
    });

    it('called every company, people and research tool both ways', () => {
      expect(TOOL_CASES.map((c) => c.tool).sort()).toEqual([...SEARCH_TOOLS].sort());
      expect(Object.keys(MINIMAL_ARGS).sort()).toEqual([...SEARCH_TOOLS].sort());
      expect([...valid].sort()).toEqual([...SEARCH_TOOLS].sort());
      expect([...refused].sort()).toEqual([...SEARCH_TOOLS].sort());
    });

    it('a read-only key sees only read tools, and cannot call a write tool', async () => {
      const ro = await connectMcp(target().url, await target().newKey({ access: 'read' }));
      try {
        const { tools } = await ro.client.listTools();
        expect(tools.map((x) => x.name).sort()).toEqual(allTools().filter((x) => x.access === 'read').map((x) => x.name).sort());
        for (const tool of tools) expect(tool.annotations?.readOnlyHint).toBe(true);
        for (const name of READ_TOOLS) expect(tools.map((x) => x.name)).toContain(name);
        // A read tool answers; every write tool is unknown to the session.
        const lists = await ro.call('get_lists');
        expect(lists).toMatchObject({ success: true, data: { success: true, data: expect.any(Array) } });
        for (const name of SEARCH_TOOLS.filter((n) => !READ_TOOLS.includes(n))) {
          expect(await ro.call(name, MINIMAL_ARGS[name])).toEqual({ success: false, error: `Tool ${name} not found` });
        }
      } finally {
        await ro.close();
      }
    });

    it('a write-only key sees only write tools, and cannot call a read tool', async () => {
      const wo = await connectMcp(target().url, await target().newKey({ access: 'write' }));
      try {
        const names = (await wo.client.listTools()).tools.map((x) => x.name).sort();
        expect(names).toEqual(allTools().filter((x) => x.access === 'write').map((x) => x.name).sort());
        // A write tool answers (the gateway lets the key write when the tool calls back); every read tool is unknown.
        expect(await wo.call('start_workflow', { prompt: 'ferry operators in the Baltic' })).toMatchObject({ success: true, data: { status: 'processing', thread_id: expect.any(String) } });
        for (const name of READ_TOOLS) expect(await wo.call(name, MINIMAL_ARGS[name])).toEqual({ success: false, error: `Tool ${name} not found` });
      } finally {
        await wo.close();
      }
    });

    it('a key scoped to the memory module sees no agents tool and cannot call one; one scoped to agents sees only those', async () => {
      const memoryOnly = await connectMcp(target().url, await target().newKey({ modules: ['mcp', 'memory'] }));
      const agentsOnly = await connectMcp(target().url, await target().newKey({ modules: ['mcp', 'agents'] }));
      try {
        const memoryTools = (await memoryOnly.client.listTools()).tools.map((x) => x.name).sort();
        expect(memoryTools).toEqual(allTools().filter((x) => x.module === 'memory').map((x) => x.name).sort());
        for (const name of SEARCH_TOOLS) {
          expect(memoryTools).not.toContain(name);
          expect(await memoryOnly.call(name, MINIMAL_ARGS[name])).toEqual({ success: false, error: `Tool ${name} not found` });
        }
        const agentsTools = (await agentsOnly.client.listTools()).tools.map((x) => x.name).sort();
        expect(agentsTools).toEqual([...SEARCH_TOOLS].sort());
        // Its own search it reads back (another's, built from a memory the key may not read, would be absent to it:
        // docs/agents.md, "Who sees a workflow").
        const own = await agentsOnly.call('start_workflow', { prompt: 'ferry operators in the Baltic' });
        expect(own).toMatchObject({ success: true, data: { thread_id: expect.any(String) } });
        expect(await agentsOnly.call('get_status_workflows', { workflow_id: own.data.thread_id })).toMatchObject({ success: true, data: { thread_id: own.data.thread_id } });
      } finally {
        await memoryOnly.close();
        await agentsOnly.close();
      }
    });

    it('serves concurrent sessions of one key, each its own, up to the per-key limit', async () => {
      const { url, key: otherKey, sessionsPerKey } = target();
      const key = await target().newKey();
      const busy = 6;
      const clients = await Promise.all(Array.from({ length: busy }, () => connectMcp(url, key)));
      try {
        expect(new Set(clients.map((x) => x.transport.sessionId)).size).toBe(busy);
        // Each session starts a search at the same time and reads its own back.
        const started = await Promise.all(clients.map((x, i) => x.call('start_workflow', { prompt: `shipping companies number ${i} in Antwerp` })));
        const threads = started.map((a) => a.data.thread_id as string);
        expect(new Set(threads).size).toBe(busy);
        const read = await Promise.all(clients.map((x, i) => x.call('get_status_workflows', { workflow_id: threads[i]! })));
        read.forEach((r, i) => expect(r).toMatchObject({ success: true, data: { thread_id: threads[i] } }));
        // Up to the limit, then a JSON-RPC error naming the count.
        clients.push(...(await Promise.all(Array.from({ length: sessionsPerKey - busy }, () => connectMcp(url, key)))));
        const over = await rawInitialize(url, { 'x-api-key': key });
        expect([over.status, over.retryAfter]).toEqual([429, '60']);
        expect(over.json.error.message).toMatch(new RegExp(`${sessionsPerKey} open sessions`));
        // Another key's session id is unknown to this key.
        const res = await fetch(new URL('/mcp', url), {
          method: 'POST',
          headers: { 'x-api-key': otherKey, 'mcp-session-id': clients[0]!.transport.sessionId!, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
        });
        expect(res.status).toBe(404);
        await res.text();
        // A closed session makes room.
        await clients.pop()!.close();
        const again = await connectMcp(url, key);
        clients.push(again);
        expect(await again.call('get_status_workflows', { workflow_id: threads[0]! })).toMatchObject({ success: true, data: { thread_id: threads[0] } });
      } finally {
        await Promise.all(clients.map((x) => x.close()));
      }
    });

    it('a tool server whose upstream is a closed port answers every tool with a clear success:false, no stack trace', async () => {
      const dead = await startDeadUpstreamMcp();
      const client = await dead.connect(target().key);
      try {
        for (const name of SEARCH_TOOLS) {
          // `call` checks the text against structuredContent, isError, and that no stack trace is in the error.
          expect([name, await client.call(name, MINIMAL_ARGS[name])]).toEqual([name, { success: false, error: 'upstream unreachable' }]);
        }
        // The server admits only the gateway's signed identity, and answers spec 3's body without a key.
        expect(await rawInitialize(dead.url, { 'x-api-key': target().key })).toMatchObject({ status: 401, json: { success: false, error: 'invalid gateway identity' } });
        expect(await rawInitialize(dead.url, {})).toMatchObject({ status: 401, json: { success: false, error: 'Missing x-api-key header' } });
      } finally {
        await client.close();
        await dead.close();
      }
    });
  });
}
