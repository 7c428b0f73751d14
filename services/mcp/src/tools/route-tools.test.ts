import { z } from 'zod';
import { enterpriseRoutes, enterpriseTools, MAX_ANSWER_DOCUMENTS, MAX_PROJECT_FILE_BYTES, readAnswerStream } from './enterprise';
import { MAX_UPLOAD_CSV_BYTES, memoryGraphRoutes, memoryGraphTools } from './memory-graph';
import { MAX_INGEST_CHARS, memoryRoutes, memoryTools } from './memory';
import { envelopeSchema, ToolInputError } from './define';
import { argumentSchema, type RouteTool } from './route-tools';

const all: RouteTool[] = [...memoryGraphRoutes, ...enterpriseRoutes, ...memoryRoutes];
const tool = (name: string): RouteTool => {
  const t = all.find((x) => x.name === name);
  if (!t) throw new Error(`no tool ${name}`);
  return t;
};
const args = (name: string, a: unknown) => argumentSchema(tool(name)).parse(a) as Record<string, unknown>;
const issues = (name: string, a: unknown) => {
  const r = argumentSchema(tool(name)).safeParse(a);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};
const SESSION = '3f0c8f8e-6a51-4b8e-9d3c-3c2b1d0a9e77';

describe('the memory-graph, enterprise and memory tools', () => {
  it('are exactly spec 3\'s memory-graph and enterprise tools, plus memory_search and memory_ingest', () => {
    expect(memoryGraphRoutes.map((t) => t.name)).toEqual([
      'memory_list_departments', 'memory_get_department', 'memory_create_department', 'memory_upload_data', 'memory_ingest_connectors', 'memory_generate', 'memory_chat',
    ]);
    expect(enterpriseRoutes.map((t) => t.name)).toEqual([
      'enterprise_send_chat_message', 'enterprise_get_chat_sessions', 'enterprise_create_chat_session', 'enterprise_rename_chat_session',
      'enterprise_get_connector_status', 'enterprise_get_connectors', 'enterprise_create_connector', 'enterprise_get_cc_pair',
      'enterprise_update_cc_pair_status', 'enterprise_connector_run_once', 'enterprise_create_deletion_attempt', 'enterprise_associate_credential',
      'enterprise_upload_project_file', 'enterprise_upload_project_files', 'enterprise_get_project_file_statuses',
    ]);
    expect(memoryRoutes.map((t) => t.name)).toEqual(['memory_search', 'memory_ingest']);
  });

  it('annotate reads as read-only and only reads as such; deletion is destructive', () => {
    for (const t of all) {
      expect(t.annotations.readOnlyHint).toBe(!t.write);
      if (!t.write) expect(t.annotations.destructiveHint).toBe(false);
    }
    expect(tool('enterprise_create_deletion_attempt').annotations.destructiveHint).toBe(true);
    expect(tool('enterprise_update_cc_pair_status').annotations.destructiveHint).toBe(true);
  });

  it('refuse empty strings and caps below 1, naming the argument', () => {
    expect(issues('memory_get_department', { graph_id: '' })).toEqual(['graph_id: must not be empty']);
    expect(issues('memory_chat', { list_id: 'g1' })).toEqual(['question: Invalid input: expected string, received undefined']);
    expect(issues('enterprise_get_cc_pair', { cc_pair_id: 0 })).toEqual(['cc_pair_id: must be at least 1']);
    expect(issues('enterprise_get_cc_pair', { cc_pair_id: 1.5 })).toEqual(['cc_pair_id: must be an integer']);
    expect(issues('memory_search', { query: 'q', top_k: 0 })).toHaveLength(1);
    expect(issues('enterprise_rename_chat_session', { chat_session_id: 'nope', name: 'x' })).toEqual(['chat_session_id: must be a UUID']);
    expect(issues('memory_list_departments', { surprise: 1 })).toHaveLength(1);
  });

  it('build the upstream request of each route', () => {
    expect(tool('memory_get_department').request(args('memory_get_department', { graph_id: 'a/b c' }))).toEqual({ base: 'memory', method: 'GET', path: '/memory/departments/a%2Fb%20c' });
    expect(tool('memory_chat').request(args('memory_chat', { list_id: 'g1', question: 'who?' }))).toEqual({ base: 'memory', method: 'POST', path: '/memory/chat', json: { listId: 'g1', question: 'who?' } });
    expect(tool('memory_ingest_connectors').request(args('memory_ingest_connectors', { list_id: 'g1' })).json).toEqual({ list_id: 'g1', source_types: null, mode: undefined, graph_name: undefined });
    expect(tool('memory_ingest').request(args('memory_ingest', { content: 'hello', vault_id: 'v_a' })).json).toMatchObject({ routing: { mode: 'manual', vault_id: 'v_a' } });
    expect(tool('enterprise_get_project_file_statuses').request(args('enterprise_get_project_file_statuses', { project_id: 3, file_ids: [SESSION, SESSION] })).query).toEqual({ file_ids: `${SESSION},${SESSION}` });
    expect(tool('enterprise_associate_credential').request(args('enterprise_associate_credential', { connector_id: 4, credential_id: 9 })).path).toBe('/api/manage/connector/4/credential/9');
    expect(tool('enterprise_send_chat_message').request(args('enterprise_send_chat_message', { chat_session_id: SESSION, message: 'hi', source_types: ['web'] })).json)
      .toMatchObject({ stream: true, include_citations: true, internal_search_filters: { source_type: ['web'] } });
  });

  it('send strings as given, never trimmed, as REST takes them: the API decides what spaces mean (they were trimmed, and "   " refused against the schema)', () => {
    expect(tool('memory_chat').request(args('memory_chat', { list_id: 'g1', question: ' who? ' })).json).toEqual({ listId: 'g1', question: ' who? ' });
    const markdown = '    indented code\n\ntext  \n';
    expect(tool('memory_ingest').request(args('memory_ingest', { content: markdown, title: ' T ' })).json).toMatchObject({ content: markdown, title: ' T ' });
    expect(tool('memory_ingest').request(args('memory_ingest', { content: '   ' })).json).toMatchObject({ content: '   ' });
    expect(tool('enterprise_rename_chat_session').request(args('enterprise_rename_chat_session', { chat_session_id: SESSION, name: ' n ' })).json).toEqual({ chat_session_id: SESSION, name: ' n ' });
    expect(tool('memory_get_department').request(args('memory_get_department', { graph_id: '   ' })).path).toBe('/memory/departments/%20%20%20');
    // What the schema publishes is the whole rule: at least one character.
    expect(issues('memory_ingest', { content: '' })).toEqual(['content: must not be empty']);
    expect(issues('memory_ingest', { content: ' '.repeat(MAX_INGEST_CHARS) })).toEqual([]);
    expect(issues('memory_ingest', { content: ' '.repeat(MAX_INGEST_CHARS + 1) })).toEqual([`content: at most ${MAX_INGEST_CHARS} characters`]);
  });

  it('refuse a graph id that is a dot segment, encoded or not, as an input error: it would take the request to another route', async () => {
    for (const dots of ['.', '..', '%2E', '%2e%2E', '.%2e']) {
      expect(() => tool('memory_get_department').request(args('memory_get_department', { graph_id: dots }))).toThrow(ToolInputError);
      const server = memoryGraphTools.find((t) => t.name === 'memory_get_department')!;
      await expect(server.call({ graph_id: dots }, undefined as never)).rejects.toThrow(`"${dots}" is not an id`);
    }
    expect(tool('memory_get_department').request(args('memory_get_department', { graph_id: '...' })).path).toBe('/memory/departments/...');
  });

  it('upload a CSV or files given as content, within the size cap, exactly one content each', () => {
    const req = tool('memory_upload_data').request(args('memory_upload_data', { list_id: 'g1', csv: 'name\nAda\n' }));
    expect(req.multipart?.fields).toEqual({ list_id: 'g1' });
    expect(req.multipart?.files.map((f) => [f.field, f.filename, f.contentType, Buffer.from(f.bytes).toString()])).toEqual([['file', 'data.csv', 'text/csv', 'name\nAda\n']]);
    expect(issues('memory_upload_data', { list_id: 'g1', csv: 'é'.repeat(MAX_UPLOAD_CSV_BYTES / 2 + 1) })).toEqual([`content: at most ${MAX_UPLOAD_CSV_BYTES} bytes`]);

    const both = issues('enterprise_upload_project_file', { project_id: 1, file_name: 'a.txt', content: 'x', content_base64: 'eA==' });
    expect(both).toEqual(['content: give exactly one of content and content_base64']);
    const many = args('enterprise_upload_project_files', { project_id: 1, files: [{ file_name: 'a.txt', content: 'A' }, { file_name: 'b.bin', content_base64: Buffer.from([0, 1, 2]).toString('base64') }] });
    const files = tool('enterprise_upload_project_files').request(many).multipart?.files ?? [];
    expect(files.map((f) => [f.field, f.filename, f.contentType, [...f.bytes]])).toEqual([['files', 'a.txt', 'text/plain', [65]], ['files', 'b.bin', 'application/octet-stream', [0, 1, 2]]]);
    expect(issues('enterprise_upload_project_files', { project_id: 1, files: [{ file_name: 'a.txt' }] })).toEqual(['files.0.content: give exactly one of content and content_base64']);
    expect(issues('enterprise_upload_project_file', { project_id: 1, file_name: 'big', content_base64: Buffer.alloc(MAX_PROJECT_FILE_BYTES + 1).toString('base64') })).toHaveLength(1);
  });

  it('declare an output schema that holds both answers', () => {
    for (const t of all) {
      const out = envelopeSchema(t.data);
      expect(out.safeParse({ success: false, error: 'upstream answered 404' }).success).toBe(true);
    }
    expect(envelopeSchema(tool('memory_chat').data).safeParse({ success: true, data: { answer: 'a', nodes: [], edges: [] } }).success).toBe(true);
  });
});

describe('readAnswerStream', () => {
  const lines = (parts: unknown[], cut = 7) => {
    const bytes = Buffer.from(parts.map((p) => JSON.stringify(p)).join('\n') + '\n');
    return (async function* () {
      for (let i = 0; i < bytes.length; i += cut) yield new Uint8Array(bytes.subarray(i, i + cut));
    })();
  };
  const limits = () => ({ maxBytes: 1_000_000, signal: new AbortController().signal });
  const doc = (n: number) => ({ document_id: `d${n}`, chunk_ind: 0, semantic_identifier: `Doc ${n}`, link: null, blurb: 'b', source_type: 'memory', score: 1 });

  it('joins the deltas and keeps citations, documents once each, and the message id', async () => {
    const out = await readAnswerStream(
      lines([
        { type: 'message_start', chat_session_id: SESSION, user_message_id: 1, parent_message_id: null },
        { type: 'search_documents', top_documents: [doc(1), doc(2)] },
        { type: 'search_documents', top_documents: [doc(2)] },
        { type: 'answer_delta', text: 'Ada wrote ' },
        { type: 'answer_delta', text: 'it [1].' },
        { type: 'citation_info', citation_num: 1, document_id: 'd1' },
        { type: 'stop', message_id: 12, chat_session_id: SESSION, stop_reason: 'finished' },
      ]),
      limits(),
    );
    expect(out).toEqual({
      answer: 'Ada wrote it [1].', citations: [{ citation_num: 1, document_id: 'd1' }], message_id: 12, chat_session_id: SESSION, error: null,
      documents: [doc(1), doc(2)].map(({ chunk_ind: _c, ...d }) => d),
    });
  });

  it('lists a document once however many of its chunks the search found, as docs/mcp.md says (one entry per chunk before)', async () => {
    const chunk = (n: number, c: number) => ({ ...doc(n), chunk_ind: c, blurb: `chunk ${c}`, score: 1 - c / 10 });
    const out = (await readAnswerStream(
      lines([
        { type: 'search_documents', top_documents: [chunk(1, 0), chunk(1, 1), chunk(2, 0), chunk(1, 2)] },
        { type: 'search_documents', top_documents: [chunk(2, 3), chunk(3, 0)] },
      ]),
      limits(),
    )) as { documents: Array<{ document_id: string; blurb: string }> };
    expect(out.documents.map((d) => [d.document_id, d.blurb])).toEqual([['d1', 'chunk 0'], ['d2', 'chunk 0'], ['d3', 'chunk 0']]);
    // The cap counts documents, not one document's chunks.
    const chunks = Array.from({ length: 60 }, (_, c) => chunk(0, c));
    const many = (await readAnswerStream(lines([{ type: 'search_documents', top_documents: [...chunks, ...Array.from({ length: 60 }, (_, i) => doc(i + 1))] }], 4096), limits())) as { documents: Array<{ document_id: string }> };
    expect(many.documents).toHaveLength(MAX_ANSWER_DOCUMENTS);
    expect(new Set(many.documents.map((d) => d.document_id)).size).toBe(MAX_ANSWER_DOCUMENTS);
  });

  it('reports a failed answer, caps documents, and stops past the byte limit', async () => {
    const failed = (await readAnswerStream(lines([{ type: 'error', error: 'provider down' }, { type: 'stop', message_id: 3, stop_reason: 'error' }]), limits())) as { error: string };
    expect(failed.error).toBe('provider down');
    const many = (await readAnswerStream(lines([{ type: 'search_documents', top_documents: Array.from({ length: 80 }, (_, i) => doc(i)) }], 4096), limits())) as { documents: unknown[] };
    expect(many.documents).toHaveLength(MAX_ANSWER_DOCUMENTS);
    await expect(readAnswerStream(lines([{ type: 'answer_delta', text: 'x'.repeat(500) }]), { maxBytes: 100, signal: new AbortController().signal })).rejects.toThrow('larger than 100 bytes');
  });
});

describe('the route tools as server tools', () => {
  it('keep names, argument checks and annotations, reads read-only', () => {
    const tools = [...memoryGraphTools, ...enterpriseTools, ...memoryTools];
    expect(tools.map((t) => t.name)).toEqual(all.map((t) => t.name));
    for (const t of tools) {
      expect(t.input).toBeInstanceOf(z.ZodObject);
      expect(t.annotations?.readOnlyHint).toBe(t.access === 'read');
    }
    const upload = enterpriseTools.find((t) => t.name === 'enterprise_upload_project_file');
    expect(upload?.input.safeParse({ project_id: 1, file_name: 'a' }).success).toBe(false);
    expect(upload?.input.safeParse({ project_id: 1, file_name: 'a', content: 'x' }).success).toBe(true);
  });
});
