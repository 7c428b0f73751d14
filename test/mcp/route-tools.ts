/**
 * The MCP server's memory-graph, enterprise-search and memory tools, one suite for both run modes
 * (route-tools-embedded.int.test.ts, route-tools-cluster.int.test.ts): the SDK's own client over Streamable HTTP to
 * the gateway in front of the tool server, and each tool calling the API back through the gateway with the caller's
 * key, so arguments, routes and answers meet the real services. Each tool once with valid arguments and once with
 * arguments the tool or the API refuses; a tool server whose upstream is a closed port, over HTTP. See "Memory graph", "Enterprise search" and
 * "Memory" in docs/mcp.md.
 */
import { until } from '../e2e/processes';
import { connectMcp, startDeadUpstreamMcp, type McpClient } from './client';
import { enterpriseTools } from '../../services/mcp/src/tools/enterprise';
import { memoryTools } from '../../services/mcp/src/tools/memory';
import { memoryGraphTools } from '../../services/mcp/src/tools/memory-graph';

/** Where the suite runs: the public address (gateway in front of the tool server) and a key of one tenant. */
export interface RouteToolsTarget {
  url: string;
  key: string;
  /** A JSON call through the gateway with that key. */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }>;
}

export function describeRouteTools(mode: string, target: () => RouteToolsTarget): void {
  const TOOLS = [...memoryGraphTools, ...enterpriseTools, ...memoryTools];
  const tested = new Set<string>();

  describe(`memory-graph, enterprise and memory tools (${mode})`, () => {
    let mcp: McpClient;
    beforeAll(async () => {
      mcp = await connectMcp(target().url, target().key);
    });
    afterAll(async () => {
      await mcp?.close();
    });
    const tool = (name: string) => {
      const t = TOOLS.find((x) => x.name === name);
      if (!t) throw new Error(`no tool ${name}`);
      tested.add(name);
      return t;
    };
    /** A tool call over MCP: its JSON text, checked against its structuredContent by the client. */
    const call = (name: string, args: Record<string, unknown>) => {
      tool(name);
      return mcp.call(name, args);
    };
    const ok = async (name: string, args: Record<string, unknown>): Promise<any> => {
      const r = await call(name, args);
      if (!r.success) throw new Error(`${name}: ${r.error}`);
      return r.data;
    };
    const refused = async (name: string, args: Record<string, unknown>, error: RegExp) => {
      const r = await call(name, args);
      expect(r.success).toBe(false);
      expect(r.error).toMatch(error);
    };

    it('list the 24 tools with their output schemas; the destructive ones annotated', async () => {
      const { tools } = await mcp.client.listTools();
      const listed = new Map(tools.map((t) => [t.name, t]));
      for (const t of TOOLS) {
        const l = listed.get(t.name);
        expect(l?.outputSchema).toMatchObject({ type: 'object', properties: { success: { type: 'boolean' } } });
        expect(l?.annotations).toMatchObject({ readOnlyHint: t.access === 'read', destructiveHint: t.annotations?.destructiveHint });
      }
      expect(listed.get('enterprise_create_deletion_attempt')?.annotations?.destructiveHint).toBe(true);
      expect(listed.get('memory_chat')?.inputSchema).toMatchObject({ required: ['list_id', 'question'], properties: { question: { type: 'string', minLength: 1 } } });
    });

    it('build a graph from a CSV, read it, ask it, and fill it from connectors and a list', async () => {
      const created = await ok('memory_create_department', { name: 'Field team', description: 'who works where' });
      expect(created).toMatchObject({ name: 'Field team', status: 'empty', node_count: 0 });
      await refused('memory_create_department', { name: '' }, /must not be empty at name/);
      const graphId = created.graph_id as string;

      expect(((await ok('memory_list_departments', {})).departments as Array<{ graph_id: string }>).map((g) => g.graph_id)).toContain(graphId);
      await refused('memory_list_departments', { limit: 5 }, /limit/);
      expect(await ok('memory_get_department', { graph_id: graphId })).toMatchObject({ graph_id: graphId, name: 'Field team' });
      await refused('memory_get_department', { graph_id: 'no-such-graph' }, /^HTTP 404/);

      const job = await ok('memory_upload_data', { list_id: graphId, csv: 'name,company,title\nZoe Brook,Acme Corp,Engineer\nLiam Hart,Acme Corp,Designer\n', file_name: 'people.csv' });
      expect(job).toMatchObject({ status: 'queued' });
      await refused('memory_upload_data', { list_id: graphId, csv: 'x', content_base64: 'eA==' }, /content_base64/);
      const ready = await until('the upload to build the graph', async () => {
        const g = await ok('memory_get_department', { graph_id: graphId });
        return g.status === 'ready' && g.node_count > 0 ? g : undefined;
      }, 60_000);
      expect(ready.node_count).toBeGreaterThan(0);

      const answer = await ok('memory_chat', { list_id: graphId, question: 'Where does Zoe Brook work?' });
      expect(answer.answer).toMatch(/Acme/);
      expect((answer.nodes as Array<{ label: string }>).map((n) => n.label)).toContain('Person');
      await refused('memory_chat', { list_id: graphId, question: '' }, /must not be empty at question/);

      expect(await ok('memory_ingest_connectors', { list_id: graphId, mode: 'incremental' })).toMatchObject({ status: 'queued' });
      await refused('memory_ingest_connectors', { list_id: graphId, mode: 'sometimes' }, /mode/);

      const columns = [{ id: 'name', header: 'Name', type: 'fixed' }, { id: 'website', header: 'Website', type: 'fixed' }];
      const records = [{ cells: { name: { value: 'Globex' }, website: { value: 'globex.example' } }, metadata: { source: 'search' } }];
      expect(await ok('memory_generate', { list_id: graphId, workflow_category: 'company_search', records, columns })).toMatchObject({ status: 'queued' });
      await refused('memory_generate', { list_id: graphId, records: [], columns }, /records/);
    });

    it('ingest into the memory and search it', async () => {
      const stored = await ok('memory_ingest', { content: 'The Skerry Point lighthouse keepers light the lamp at dusk every evening.', title: 'Keepers log' });
      expect(stored).toMatchObject({ doc_id: expect.any(String), vault_id: expect.any(String) });
      await refused('memory_ingest', { content: '' }, /must not be empty at content/);
      // A string is sent as given: what a text of spaces is, the API says, as it does to REST (the tool trimmed it).
      await refused('memory_ingest', { content: '   ' }, /^HTTP 4\d\d: .*content is empty/);
      const found = await until('the ingested text to be searchable', async () => {
        const r = await ok('memory_search', { query: 'When do the Skerry Point keepers light the lamp?' });
        return (r.citations as Array<{ document_id: string }>).some((c) => c.document_id === stored.doc_id) ? r : undefined;
      }, 60_000);
      expect(found.answer.length).toBeGreaterThan(0);
      await refused('memory_search', { query: 'lamp', top_k: 0 }, /top_k/);
    });

    it('chat in a session: create, rename, list, and an answer collected from the stream', async () => {
      const session = await ok('enterprise_create_chat_session', { persona_id: 0 });
      const sid = session.chat_session_id as string;
      await refused('enterprise_create_chat_session', { persona_id: 987654 }, /^HTTP 400/);
      expect(await ok('enterprise_rename_chat_session', { chat_session_id: sid, name: 'Lamp hours' })).toEqual({ new_name: 'Lamp hours' });
      await refused('enterprise_rename_chat_session', { chat_session_id: 'not-a-uuid', name: 'x' }, /must be a UUID at chat_session_id/);

      const answer = await ok('enterprise_send_chat_message', { chat_session_id: sid, message: 'When do the Skerry Point keepers light the lamp?' });
      expect(answer).toMatchObject({ chat_session_id: sid, error: null, message_id: expect.any(Number) });
      expect(answer.answer.length).toBeGreaterThan(0);
      await refused('enterprise_send_chat_message', { chat_session_id: '00000000-0000-4000-8000-000000000000', message: 'hello' }, /^HTTP 404/);

      const sessions = (await ok('enterprise_get_chat_sessions', { include_failed_chats: true })).sessions as Array<{ id: string; name: string }>;
      expect(sessions.find((s) => s.id === sid)?.name).toBe('Lamp hours');
      await refused('enterprise_get_chat_sessions', { project_id: 0 }, /must be at least 1 at project_id/);
    });

    it('administer a file connector: create, associate, status, pause, run once, delete', async () => {
      const key = target().key;
      const form = new FormData();
      form.append('files', new Blob(['Tide tables for Skerry Point.'], { type: 'text/plain' }), 'tides.txt');
      const up = await fetch(`${target().url}/api/manage/admin/connector/file/upload`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
      expect(up.status).toBe(200);
      const paths = ((await up.json()) as { file_paths: string[] }).file_paths;
      const cred = await target().call('POST', '/api/manage/credential', { name: 'files', source: 'file', credential_json: {} });
      expect(cred.status).toBe(201);
      const credentialId = cred.json.id as number;

      const connector = await ok('enterprise_create_connector', { name: 'Tides', source: 'file', input_type: 'load_state', connector_specific_config: { file_locations: paths }, access_type: 'public' });
      const connectorId = connector.id as number;
      await refused('enterprise_create_connector', { name: 'Bad', source: 'fax', input_type: 'load_state', connector_specific_config: {}, access_type: 'public' }, /^HTTP 422/);

      const pair = await ok('enterprise_associate_credential', { connector_id: connectorId, credential_id: credentialId, name: 'Tides pair' });
      const pairId = pair.id as number;
      expect(pair).toMatchObject({ name: 'Tides pair', connector: { id: connectorId } });
      await refused('enterprise_associate_credential', { connector_id: connectorId, credential_id: 999_999 }, /^HTTP 404/);

      expect((await ok('enterprise_get_connector_status', {})).map((s: { cc_pair_id: number }) => s.cc_pair_id)).toContain(pairId);
      await refused('enterprise_get_connector_status', { verbose: true }, /verbose/);
      expect((await ok('enterprise_get_connectors', { credential: credentialId })).map((s: { cc_pair_id: number }) => s.cc_pair_id)).toEqual([pairId]);
      await refused('enterprise_get_connectors', { credential: -1 }, /must be at least 1 at credential/);
      expect(await ok('enterprise_get_cc_pair', { cc_pair_id: pairId })).toMatchObject({ id: pairId, name: 'Tides pair' });
      await refused('enterprise_get_cc_pair', { cc_pair_id: 999_999 }, /^HTTP 404: cc pair not found/);

      expect(await ok('enterprise_update_cc_pair_status', { cc_pair_id: pairId, status: 'PAUSED' })).toMatchObject({ status: 'PAUSED' });
      await refused('enterprise_connector_run_once', { connector_id: connectorId }, /^HTTP 400/);
      expect(await ok('enterprise_update_cc_pair_status', { cc_pair_id: pairId, status: 'ACTIVE' })).toMatchObject({ status: 'ACTIVE' });
      await refused('enterprise_update_cc_pair_status', { cc_pair_id: pairId, status: 'STOPPED' }, /status/);

      const run = await ok('enterprise_connector_run_once', { connector_id: connectorId, from_beginning: true });
      expect((run.attempts as Array<{ cc_pair_id: number }>).map((a) => a.cc_pair_id)).toEqual([pairId]);

      expect(await ok('enterprise_create_deletion_attempt', { connector_id: connectorId, credential_id: credentialId })).toMatchObject({ cc_pair_id: pairId, status: 'DELETING' });
      await refused('enterprise_create_deletion_attempt', { connector_id: 999_999, credential_id: credentialId }, /^HTTP 404/);
    });

    it('upload files to a chat project and poll their statuses', async () => {
      const project = await target().call('POST', '/api/chat/projects', { name: 'Harbour' });
      expect(project.status).toBe(201);
      const pid = project.json.id as number;

      const one = await ok('enterprise_upload_project_file', { project_id: pid, file_name: 'moorings.txt', content: 'Berth 4 is kept for the pilot boat.' });
      expect((one.files as Array<{ status: string }>).map((f) => f.status)).toEqual(['processing']);
      await refused('enterprise_upload_project_file', { project_id: pid, file_name: 'empty.txt' }, /exactly one of content and content_base64/);

      const two = await ok('enterprise_upload_project_files', {
        project_id: pid,
        files: [{ file_name: 'a.txt', content: 'The harbour master is Ada.' }, { file_name: 'b.md', content_base64: Buffer.from('# Tides\nHigh water at noon.').toString('base64'), content_type: 'text/markdown' }],
      });
      expect((two.files as Array<{ name: string }>).map((f) => f.name)).toEqual(['a.txt', 'b.md']);
      await refused('enterprise_upload_project_files', { project_id: 999_999, files: [{ file_name: 'a.txt', content: 'x' }] }, /^HTTP 404/);

      const ids = [...one.files, ...two.files].map((f: { id: string }) => f.id);
      const settled = await until('the project files to settle', async () => {
        const r = await ok('enterprise_get_project_file_statuses', { project_id: pid, file_ids: ids });
        return (r.files as Array<{ status: string }>).every((f) => f.status !== 'processing') ? r.files : undefined;
      }, 60_000);
      expect(settled.map((f: { status: string }) => f.status)).toEqual(['completed', 'completed', 'completed']);
      await refused('enterprise_get_project_file_statuses', { project_id: pid, file_ids: ['nope'] }, /must be a UUID at file_ids\[0\]/);
    });

    it('report an upstream that does not answer as success:false without a stack, every tool', async () => {
      const S = '00000000-0000-4000-8000-000000000000';
      const minimal: Record<string, Record<string, unknown>> = {
        memory_list_departments: {}, memory_get_department: { graph_id: 'g' }, memory_create_department: { name: 'n' },
        memory_upload_data: { list_id: 'g', csv: 'a\n1\n' }, memory_ingest_connectors: { list_id: 'g' },
        memory_generate: { list_id: 'g', records: [{ cells: {} }], columns: [{ id: 'a', header: 'A', type: 'fixed' }] }, memory_chat: { list_id: 'g', question: 'q' },
        enterprise_send_chat_message: { chat_session_id: S, message: 'm' }, enterprise_get_chat_sessions: {}, enterprise_create_chat_session: { persona_id: 0 },
        enterprise_rename_chat_session: { chat_session_id: S, name: 'n' }, enterprise_get_connector_status: {}, enterprise_get_connectors: {},
        enterprise_create_connector: { name: 'n', source: 'file', input_type: 'load_state', connector_specific_config: {}, access_type: 'public' },
        enterprise_get_cc_pair: { cc_pair_id: 1 }, enterprise_update_cc_pair_status: { cc_pair_id: 1, status: 'PAUSED' }, enterprise_connector_run_once: { connector_id: 1 },
        enterprise_create_deletion_attempt: { connector_id: 1, credential_id: 1 }, enterprise_associate_credential: { connector_id: 1, credential_id: 1 },
        enterprise_upload_project_file: { project_id: 1, file_name: 'a.txt', content: 'x' }, enterprise_upload_project_files: { project_id: 1, files: [{ file_name: 'a.txt', content: 'x' }] },
        enterprise_get_project_file_statuses: { project_id: 1 }, memory_search: { query: 'q' }, memory_ingest: { content: 'c' },
      };
      expect(Object.keys(minimal).sort()).toEqual(TOOLS.map((t) => t.name).sort());
      // The tool server as deployed, its AGENT_CORE_URL and MEMORY_URL a closed port, with the SDK's client over HTTP.
      const dead = await startDeadUpstreamMcp();
      const client = await dead.connect(target().key);
      try {
        for (const t of TOOLS) {
          // `call` checks the text against structuredContent, isError, and that no stack trace is in the error.
          expect([t.name, await client.call(t.name, minimal[t.name])]).toEqual([t.name, { success: false, error: 'upstream unreachable' }]);
        }
      } finally {
        await client.close();
        await dead.close();
      }
    });

    it('covered every tool', () => {
      expect([...tested].sort()).toEqual(TOOLS.map((t) => t.name).sort());
    });
  });
}
