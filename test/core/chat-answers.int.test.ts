import { request } from 'node:http';
import { Client } from 'pg';
/**
 * Chat answers end to end with the embedded extractive model: client → gateway → core → (internal_search) the
 * memory API with the caller's identity, on real PostgreSQL, Redis and Kafka. Spec 2's complete response and
 * search document fields exactly; the streamed parts in order; the message tree (edits, branches, seeded turns);
 * feedback; token budgets; isolation.
 */
import { createLogger, createMetricsRegistry, IdentitySigner, PostgresBlobStore } from '@lore/runtime';
import { createCoreService, GraphKnowledgeSearch } from '@lore/core';
import { closeIdleHttpConnections, http } from '../support/http';
import { IDENTITY_SECRET, type TenantFixture } from '../gateway/harness';
import { testEncryptionKeys } from '../support/encryption';
import { startCoreStack, type CoreStack } from './harness';

const COMPLETE_FIELDS = ['answer', 'answer_citationless', 'chat_session_id', 'citation_info', 'error_msg', 'message_id', 'pre_answer_reasoning', 'tool_calls', 'top_documents'];
const DOC_FIELDS = [
  'blurb', 'boost', 'chunk_ind', 'document_id', 'hidden', 'is_internet', 'is_relevant', 'link', 'match_highlights', 'metadata', 'primary_owners',
  'relevance_explanation', 'score', 'secondary_owners', 'semantic_identifier', 'source_type', 'updated_at',
];
const TOOL_FIELDS = ['generated_images', 'pre_reasoning', 'search_docs', 'tool_arguments', 'tool_name', 'tool_result'];

type Part = { type: string; [k: string]: unknown };

/** The NDJSON parts of a streamed answer. */
function parts(text: string): Part[] {
  return text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Part);
}

describe('core: chat answers over the memory, through the gateway', () => {
  let s: CoreStack;
  let a: TenantFixture;
  let b: TenantFixture;
  let docId: string;
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  const QUESTION = 'When do the lighthouse keepers on Skerry Point log the fog horn?';

  beforeAll(async () => {
    s = await startCoreStack();
    a = await s.tenant();
    b = await s.tenant();
    const ingest = await s.call('POST', '/api/v1/memory/ingest', { 'x-api-key': a.key }, {
      content: 'Lighthouse keepers on Skerry Point log the fog horn every evening at nine. The lamp was electrified in 1961.',
      content_type: 'text', routing: { mode: 'auto' },
    });
    expect(ingest.status).toBe(200);
    docId = ingest.json.doc_id as string;
    // Indexing runs in the graph worker (Kafka): wait until retrieval finds the document.
    let found = false;
    for (let i = 0; i < 200 && !found; i++) {
      const r = await s.call('POST', '/api/v1/memory/retrieve', { 'x-api-key': a.key }, { query: 'fog horn Skerry Point' });
      expect(r.status).toBe(200);
      found = r.json.chunks.some((c: { document_id: string }) => c.document_id === docId);
      if (!found) await new Promise((res) => setTimeout(res, 200));
    }
    // Every test below asks about it: say so here rather than five times over.
    if (!found) throw new Error('the ingested document was not indexed within 40 s');
  }, 60_000);
  afterAll(async () => {
    await s?.close();
    closeIdleHttpConnections();
  });

  async function newSession(key: string): Promise<string> {
    const r = await s.call('POST', '/api/chat/create-chat-session', as(key), { persona_id: 0 });
    expect(r.status).toBe(200);
    return r.json.chat_session_id as string;
  }

  it('answers a complete response with exactly the spec\'s fields, cited from the tenant\'s document', async () => {
    const id = await newSession(a.key);
    const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, stream: false });
    expect(r.status).toBe(200);
    expect(Object.keys(r.json).sort()).toEqual(COMPLETE_FIELDS);
    expect(r.json.error_msg).toBeNull();
    expect(r.json.chat_session_id).toBe(id);
    expect(Number.isInteger(r.json.message_id)).toBe(true);
    expect(r.json.answer).toMatch(/nine/);
    expect(r.json.answer).toMatch(/\[1\]/);
    expect(r.json.answer_citationless).not.toMatch(/\[\d+\]/);
    expect(r.json.citation_info).toContainEqual({ citation_num: 1, document_id: docId });
    const doc = r.json.top_documents[0];
    expect(Object.keys(doc).sort()).toEqual(DOC_FIELDS);
    expect(doc).toMatchObject({ document_id: docId, source_type: 'memory', is_internet: false, hidden: false, link: `/api/v1/memory/documents/${docId}?memory_id=${a.memoryId}` });
    expect(r.json.tool_calls).toHaveLength(1);
    expect(Object.keys(r.json.tool_calls[0]).sort()).toEqual(TOOL_FIELDS);
    expect(r.json.tool_calls[0]).toMatchObject({ tool_name: 'internal_search', generated_images: null });
    expect(r.json.tool_calls[0].tool_arguments.queries.length).toBeGreaterThan(0);

    // The answer is stored in the session's tree, under the question, and names the session.
    const d = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
    expect(d.json.messages.map((m: { message_type: string }) => m.message_type)).toEqual(['system', 'user', 'assistant']);
    expect(d.json.messages[2]).toMatchObject({ message_id: r.json.message_id, message: r.json.answer, citations: { 1: docId }, error: null });
    expect(d.json.messages[2].documents).toEqual(r.json.top_documents);
    expect(d.json.messages[2].tool_calls).toEqual(r.json.tool_calls);
    expect(d.json.description).toBe(QUESTION);
  });

  it('streams the parts in order, and the deltas are the stored answer', async () => {
    const id = await newSession(a.key);
    const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id });
    expect(r.status).toBe(200);
    expect(String(r.headers['content-type'])).toMatch(/^text\/event-stream/);
    const ps = parts(r.text);
    const kinds = ps.map((p) => p.type);
    expect(kinds[0]).toBe('message_start');
    expect(kinds.slice(1, 3)).toEqual(['tool_call', 'search_documents']);
    expect(kinds.at(-1)).toBe('stop');
    const firstDelta = kinds.indexOf('answer_delta');
    const firstCitation = kinds.indexOf('citation_info');
    expect(firstDelta).toBeGreaterThan(2);
    expect(firstCitation).toBeGreaterThan(firstDelta);
    expect(kinds).not.toContain('error');
    const answer = ps.filter((p) => p.type === 'answer_delta').map((p) => p.text).join('');
    const stop = ps.at(-1)!;
    expect(stop).toMatchObject({ stop_reason: 'finished', chat_session_id: id });
    const d = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
    expect(d.json.messages.at(-1)).toMatchObject({ message_id: stop.message_id, message: answer });
    expect(ps[0]!.user_message_id).toBe(d.json.messages[1].message_id);
  });

  it('never shows one tenant\'s documents to another (crafted questions included)', async () => {
    const id = await newSession(b.key);
    for (const message of [QUESTION, `${docId} Skerry Point fog horn`, `tenant_id ${a.tenantId} lighthouse`]) {
      const r = await s.call('POST', `/api/chat/send-chat-message?tenant_id=${encodeURIComponent(a.tenantId)}`, as(b.key), { message, chat_session_id: id, stream: false });
      expect(r.status).toBe(200);
      expect(r.json.top_documents).toEqual([]);
      expect(r.json.citation_info).toEqual([]);
      expect(r.json.answer).not.toMatch(/nine/);
    }
  });

  it('keeps to the source types asked for', async () => {
    const id = await newSession(a.key);
    const none = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, stream: false, internal_search_filters: { source_type: ['web'] } });
    expect(none.json.top_documents).toEqual([]);
    const memory = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, stream: false, internal_search_filters: { source_type: ['memory'] } });
    expect(memory.json.top_documents.map((d: { document_id: string }) => d.document_id)).toContain(docId);
  });

  it('keeps a persona\'s searches to its source types, narrowed (never widened) by the request\'s filter', async () => {
    const persona = async (source_types: string[]) => (await s.call('POST', '/api/persona', as(a.key), { name: `Sources ${source_types.join('+')}`, tool_ids: [1], source_types })).json.id as number;
    const ask = async (personaId: number, filter?: string[]) => {
      const id = (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: personaId })).json.chat_session_id as string;
      const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, stream: false, ...(filter ? { internal_search_filters: { source_type: filter } } : {}) });
      expect(r.status).toBe(200);
      return (r.json.top_documents as Array<{ document_id: string }>).map((d) => d.document_id);
    };
    const webOnly = await persona(['web']);
    const memoryAndWeb = await persona(['memory', 'web']);
    expect(await ask(webOnly)).toEqual([]);
    // A request cannot widen the persona's sources, and may narrow them.
    expect(await ask(webOnly, ['memory'])).toEqual([]);
    expect(await ask(memoryAndWeb)).toContain(docId);
    expect(await ask(memoryAndWeb, ['memory'])).toContain(docId);
    expect(await ask(memoryAndWeb, ['web'])).toEqual([]);
  });

  it('answers and stores a turn citing a document whose snippet would be cut through an emoji', async () => {
    const key = { 'x-api-key': a.key };
    const created = await s.call('POST', '/api/v1/workspaces', key, { name: `Emoji ${Date.now()}` });
    expect(created.status).toBe(201);
    const w = created.json.workspace_id as string;
    // 280 UTF-16 units in, with no space before, an emoji's two halves sit across the snippet's cut.
    const ingest = await s.call('POST', `/api/v1/memory/ingest?workspace_id=${w}`, key, { content: `y${'😀'.repeat(400)} zanzibar quota is nine`, content_type: 'text', routing: { mode: 'auto' } });
    expect(ingest.status).toBe(200);
    const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    let cited: { document_id: string; blurb: string } | undefined;
    for (let i = 0; i < 100 && !cited; i++) {
      if (i > 0) await new Promise((res) => setTimeout(res, 200));
      const id = (await s.call('POST', `/api/chat/create-chat-session?workspace_id=${w}`, as(a.key), { persona_id: 0 })).json.chat_session_id as string;
      // Until 2026-11-30 the snippet kept a lone half of the emoji, and the answer could not be stored: 500.
      const r = await s.call('POST', `/api/chat/send-chat-message?workspace_id=${w}`, as(a.key), { message: 'What is the zanzibar quota?', chat_session_id: id, stream: false });
      expect(r.status).toBe(200);
      cited = (r.json.top_documents as Array<{ document_id: string; blurb: string }>).find((d) => d.document_id === ingest.json.doc_id);
      if (cited) {
        expect(lone.test(cited.blurb)).toBe(false);
        const stored = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
        expect((stored.json.messages as Array<{ message_type: string }>).map((m) => m.message_type)).toEqual(['system', 'user', 'assistant']);
      }
    }
    expect(cited).toBeDefined();
    // The memory's own retrieval serves the snippet whole too.
    const retrieved = await s.call('POST', `/api/v1/memory/retrieve?workspace_id=${w}`, key, { query: 'zanzibar quota' });
    expect((retrieved.json.chunks as Array<{ snippet?: string; content?: string }>).every((c) => !lone.test(JSON.stringify(c)))).toBe(true);
  });

  it('links a memory document to the memory the chat searched, so the same key opens it from any workspace', async () => {
    const key = { 'x-api-key': a.key };
    const created = await s.call('POST', '/api/v1/workspaces', key, { name: `Falcon ${Date.now()}` });
    expect(created.status).toBe(201);
    const w2 = created.json.workspace_id as string;
    const ingest = await s.call('POST', `/api/v1/memory/ingest?workspace_id=${w2}`, key, {
      content: 'The launch code word for the falcon program is BLUEBIRD.', content_type: 'text', routing: { mode: 'auto' },
    });
    expect(ingest.status).toBe(200);
    let top: Array<{ document_id: string; link: string }> = [];
    for (let i = 0; i < 100 && !top.some((d) => d.document_id === ingest.json.doc_id); i++) {
      if (i > 0) await new Promise((res) => setTimeout(res, 200));
      const id = (await s.call('POST', `/api/chat/create-chat-session?workspace_id=${w2}`, as(a.key), { persona_id: 0 })).json.chat_session_id as string;
      const r = await s.call('POST', `/api/chat/send-chat-message?workspace_id=${w2}`, as(a.key), { message: 'What is the launch code word for the falcon program?', chat_session_id: id, stream: false });
      top = r.json.top_documents;
    }
    const doc = top.find((d) => d.document_id === ingest.json.doc_id)!;
    expect(doc.link).toMatch(/\?memory_id=/);
    // The key's active workspace is still the default one: the link names the memory itself.
    const opened = await s.call('GET', doc.link, key);
    expect([opened.status, opened.json.doc_id]).toEqual([200, ingest.json.doc_id]);
  });

  it('streams no citation markers with include_citations false, and stores the cited answer still', async () => {
    const id = await newSession(a.key);
    const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, include_citations: false });
    const ps = parts(r.text);
    expect(ps.map((p) => p.type)).not.toContain('citation_info');
    const streamed = ps.filter((p) => p.type === 'answer_delta').map((p) => p.text).join('');
    expect(streamed).toMatch(/nine/);
    expect(streamed).not.toMatch(/\[\d+\]/);
    const d = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
    const stored = d.json.messages.at(-1) as { message: string; citations: Record<string, string> };
    expect(stored.message).toMatch(/\[1\]/);
    expect(stored.citations).toEqual({ 1: docId });
    expect(streamed).toBe(stored.message.replace(/\s*\[\d+(?:\s*,\s*\d+)*\]/g, '').trim());
  });

  it('edits and regenerates as branches, and switches branches with set-message-as-latest', async () => {
    const id = await newSession(a.key);
    const first = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, stream: false });
    const before = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
    const [root, question] = before.json.messages as Array<{ message_id: number }>;
    // An edit: another text under the same parent (the root).
    const edit = parts((await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: id, parent_message_id: root!.message_id, message: 'When was the Skerry Point lamp electrified?' })).text);
    expect(edit.at(-1)).toMatchObject({ type: 'stop', stop_reason: 'finished' });
    const after = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
    expect(after.json.messages[1].message).toBe('When was the Skerry Point lamp electrified?');
    expect(after.json.messages[2].message).toMatch(/1961/);
    expect(after.json.messages).toHaveLength(3);
    // Back to the first branch.
    expect((await s.call('PUT', '/api/chat/set-message-as-latest', as(a.key), { message_id: question!.message_id })).status).toBe(200);
    const back = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
    expect(back.json.messages.map((m: { message_id: number }) => m.message_id)).toEqual([root!.message_id, question!.message_id, first.json.message_id]);
    // Another tenant cannot switch it.
    expect((await s.call('PUT', '/api/chat/set-message-as-latest', as(b.key), { message_id: question!.message_id })).status).toBe(404);
  });

  it('shows the branch of a message of an older branch once it is answered, continued or set as the latest, up to the root', async () => {
    const id = await newSession(a.key);
    const shown = async () => ((await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.messages as Array<{ message_id: number; message: string }>).map((m) => m.message_id);
    const ask = async (body: Record<string, unknown>) => {
      const ps = parts((await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: id, ...body })).text);
      expect(ps.at(-1)).toMatchObject({ type: 'stop', stop_reason: 'finished' });
      return ps.at(-1)!.message_id as number;
    };
    // root → q1 → a1 → q2 → a2, then q1 edited: the shown branch is root → q1' → a1'.
    await ask({ message: QUESTION });
    await ask({ message: 'When was the Skerry Point lamp electrified?' });
    const [root, q1, a1, q2, a2] = await shown();
    const a1b = await ask({ parent_message_id: root, message: `${QUESTION} (edited)` });
    expect((await shown()).at(-1)).toBe(a1b);
    // Answering q2 again (an older branch's question) shows its branch, from the root down to the new answer.
    const a2b = await ask({ parent_message_id: q2, use_existing_user_message: true });
    expect(await shown()).toEqual([root, q1, a1, q2, a2b]);
    // Back to the edited branch, then set-message-as-latest on the older branch's answer: its whole branch is shown.
    expect((await s.call('PUT', '/api/chat/set-message-as-latest', as(a.key), { message_id: a1b })).status).toBe(200);
    expect((await shown()).at(-1)).toBe(a1b);
    expect((await s.call('PUT', '/api/chat/set-message-as-latest', as(a.key), { message_id: q2 })).status).toBe(200);
    expect(await shown()).toEqual([root, q1, a1, q2, a2b]);
    await s.call('PUT', '/api/chat/set-message-as-latest', as(a.key), { message_id: a1b });
    expect((await s.call('PUT', '/api/chat/set-message-as-latest', as(a.key), { message_id: a2 })).status).toBe(200);
    expect(await shown()).toEqual([root, q1, a1, q2, a2]);
    // A new message under an older branch's answer: that branch, ending with it, is shown.
    await s.call('PUT', '/api/chat/set-message-as-latest', as(a.key), { message_id: a1b });
    const a3 = await ask({ parent_message_id: a1, message: 'Who keeps the Skerry Point light?' });
    const after = await shown();
    expect(after.slice(0, 3)).toEqual([root, q1, a1]);
    expect(after.at(-1)).toBe(a3);
  });

  it('answers a seeded session\'s first message with use_existing_user_message', async () => {
    const seeded = await s.call('POST', '/api/chat/seed-chat-session', as(a.key), { persona_id: 0, message: QUESTION });
    expect(seeded.status).toBe(200);
    const id = seeded.json.chat_session_id as string;
    expect(seeded.json.message_id).toEqual(expect.any(Number));
    const ps = parts((await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: id, use_existing_user_message: true })).text);
    expect(ps[0]).toMatchObject({ type: 'message_start', user_message_id: seeded.json.message_id });
    const d = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
    expect(d.json.messages.map((m: { message_type: string }) => m.message_type)).toEqual(['system', 'user', 'assistant']);
    expect(d.json.messages[2].message).toMatch(/nine/);
    expect((await s.call('POST', '/api/chat/seed-chat-session', as(a.key), { persona_id: 999 })).status).toBe(400);
  });

  it('keeps every question under an answer: turns sent at once follow each other or wait (409), a seeded question is replaced, a question is no parent', async () => {
    type Msg = { message_id: number; parent_message_id: number | null; message_type: string };
    const tree = async (id: string) => {
      const all = await s.db.withTenant(a.tenantId, async (sql) =>
        (await sql.query<Msg>(`SELECT message_id::int, parent_message_id::int, message_type FROM core.chat_messages WHERE tenant_id = $1 AND session_id = $2`, [a.tenantId, id])).rows);
      const byId = new Map(all.map((m) => [m.message_id, m]));
      return { all, shown: ((await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.messages as Msg[]).map((m) => m.message_id), byId };
    };
    // Three turns sent to one session at once: each answered turn follows the one before it on the shown branch, and
    // a turn sent while another is being answered is refused (409), nothing stored for it.
    for (let round = 0; round < 3; round++) {
      const id = await newSession(a.key);
      const sent = await Promise.all([0, 1, 2].map((i) => s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: `${QUESTION} (${i})`, chat_session_id: id, stream: false })));
      expect(sent.map((r) => r.status).every((st) => st === 200 || st === 409)).toBe(true);
      for (const r of sent.filter((x) => x.status === 409)) expect(r.json.detail).toMatch(/still being answered/);
      const answered = sent.filter((r) => r.status === 200).map((r) => r.json.message_id as number);
      expect(answered.length).toBeGreaterThan(0);
      const { all, shown, byId } = await tree(id);
      for (const m of all) if (m.message_type === 'user') expect(byId.get(m.parent_message_id!)?.message_type).not.toBe('user');
      for (const mid of answered) expect(shown).toContain(mid);
      expect(all.filter((m) => m.message_type === 'user')).toHaveLength(answered.length);
    }

    // A question marked as being answered refuses a new message and a second answer to it alike.
    const seeded = await s.call('POST', '/api/chat/seed-chat-session', as(a.key), { persona_id: 0, message: QUESTION });
    const sid = seeded.json.chat_session_id as string;
    const mark = (until: string) => s.db.withTenant(a.tenantId, (sql) => sql.query(`UPDATE core.chat_messages SET answering_until = ${until} WHERE tenant_id = $1 AND message_id = $2`, [a.tenantId, seeded.json.message_id]));
    await mark(`now() + interval '1 minute'`);
    expect((await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'Another question', chat_session_id: sid, stream: false })).status).toBe(409);
    expect((await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: sid, use_existing_user_message: true })).status).toBe(409);
    // Once the mark has expired (its answer never came), a new message takes the seeded question's place.
    await mark(`now() - interval '1 second'`);
    const next = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: sid, stream: false });
    expect(next.status).toBe(200);
    const after = await tree(sid);
    const [root] = after.all.filter((m) => m.message_type === 'system');
    const newQuestion = after.byId.get(after.byId.get(next.json.message_id)!.parent_message_id!)!;
    expect(newQuestion.parent_message_id).toBe(root!.message_id);
    expect(after.shown).toEqual([root!.message_id, newQuestion.message_id, next.json.message_id]);
    // The seeded question stays, on its own branch: naming it as a parent is refused (a question is no parent).
    const underQuestion = await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: sid, parent_message_id: seeded.json.message_id, message: 'hi' });
    expect([underQuestion.status, underQuestion.json.detail]).toEqual([400, expect.stringMatching(/is a question/)]);
  });

  it('lists a seeded session, and one whose question is being answered, as sessions, not failed chats', async () => {
    const listed = async (failed = false) => ((await s.call('GET', `/api/chat/get-user-chat-sessions${failed ? '?include_failed_chats=true' : ''}`, as(a.key))).json.sessions as Array<{ id: string }>).map((x) => x.id);
    const seeded = await s.call('POST', '/api/chat/seed-chat-session', as(a.key), { persona_id: 0, message: QUESTION });
    const sid = seeded.json.chat_session_id as string;
    expect(await listed()).toContain(sid);
    // Its question being answered (the mark a turn sets): still listed.
    const sql = (text: string, params: unknown[]) => s.db.withTenant(a.tenantId, (q) => q.query(text, [a.tenantId, ...params]));
    await sql(`UPDATE core.chat_messages SET answering_until = now() + interval '1 minute' WHERE tenant_id = $1 AND message_id = $2`, [seeded.json.message_id]);
    expect(await listed()).toContain(sid);
    // Its answer failed: a failed chat, listed only with include_failed_chats.
    await sql(`UPDATE core.chat_messages SET answering_until = NULL WHERE tenant_id = $1 AND message_id = $2`, [seeded.json.message_id]);
    await sql(`INSERT INTO core.chat_messages (tenant_id, session_id, parent_message_id, message_type, message, error) VALUES ($1, $2, $3, 'assistant', '', 'the answer could not be completed')`, [sid, seeded.json.message_id]);
    expect(await listed()).not.toContain(sid);
    expect(await listed(true)).toContain(sid);
  });

  it('names a session from its first question without cutting a character in half, and from a trimmed description', async () => {
    const long = `${'a'.repeat(119)}😀 fog horn`;
    const id = await newSession(a.key);
    expect((await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: long, chat_session_id: id, stream: false })).status).toBe(200);
    expect((await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.description).toBe('a'.repeat(119));
    const seeded = await s.call('POST', '/api/chat/seed-chat-session', as(a.key), { persona_id: 0, message: long });
    expect((await s.call('GET', `/api/chat/get-chat-session/${seeded.json.chat_session_id}`, as(a.key))).json.description).toBe('a'.repeat(119));
    // A description of only spaces is no name: the first question names the session.
    const blank = (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 0, description: '   ' })).json.chat_session_id as string;
    expect((await s.call('GET', `/api/chat/get-chat-session/${blank}`, as(a.key))).json.description).toBe('');
    await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: blank, stream: false });
    expect((await s.call('GET', `/api/chat/get-chat-session/${blank}`, as(a.key))).json.description).toBe(QUESTION);
    const named = (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 0, description: '  Fog log  ' })).json.chat_session_id as string;
    expect((await s.call('GET', `/api/chat/get-chat-session/${named}`, as(a.key))).json.description).toBe('Fog log');
  });

  it('ends the answering marks a stopped process left when the one process that answers starts (embedded mode)', async () => {
    const seeded = await s.call('POST', '/api/chat/seed-chat-session', as(a.key), { persona_id: 0, message: QUESTION });
    const sid = seeded.json.chat_session_id as string;
    // A turn was answering this question when its process died: the mark it left.
    await s.db.withTenant(a.tenantId, (sql) => sql.query(`UPDATE core.chat_messages SET answering_until = now() + interval '5 minutes' WHERE tenant_id = $1 AND message_id = $2`, [a.tenantId, seeded.json.message_id]));
    const start = async (soleAnswerer: boolean) => {
      const core = await createCoreService({
        db: s.db, migrate: false, soleAnswerer,
        logger: createLogger({ level: 'silent', service: 'core-test' }), metrics: createMetricsRegistry('core-restart', { defaultMetrics: false }),
        signer: new IdentitySigner(IDENTITY_SECRET), encryptionKeys: testEncryptionKeys(), blobs: new PostgresBlobStore(s.db),
        knowledge: new GraphKnowledgeSearch({ url: 'http://127.0.0.1:9', timeoutMs: 1_000 }),
      });
      await core.close();
    };
    // A cluster's core replica starting beside others leaves it (the turn may be another replica's).
    await start(false);
    expect((await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'Another question', chat_session_id: sid, stream: false })).status).toBe(409);
    // The sole answerer's start ends it, and the next turn is answered at once.
    await start(true);
    const next = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: sid, stream: false });
    expect(next.status).toBe(200);
  });

  it('clears a question\'s answering mark when its answer cannot be stored, so the next turn is not refused', async () => {
    const id = await newSession(a.key);
    // The database refuses this session's answers (a trigger the schema owner adds for the test; removed after).
    const owner = new Client({ connectionString: s.database.ownerUrl });
    await owner.connect();
    const fn = `core.refuse_answers_${id.replace(/-/g, '')}`;
    try {
      await owner.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'answers refused for the test'; END $$`);
      await owner.query(`CREATE TRIGGER refuse_answers BEFORE INSERT ON core.chat_messages FOR EACH ROW WHEN (NEW.message_type = 'assistant' AND NEW.session_id = '${id}') EXECUTE FUNCTION ${fn}()`);
      const failed = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, stream: false });
      // A fault, in core's `{detail}` as every core answer.
      expect([failed.status, failed.json]).toEqual([500, { detail: 'internal error' }]);
      const marked = await s.db.withTenant(a.tenantId, (sql) =>
        sql.query<{ answering_until: Date | null }>(`SELECT answering_until FROM core.chat_messages WHERE tenant_id = $1 AND session_id = $2 AND message_type = 'user'`, [a.tenantId, id]),
      );
      expect(marked.rows).toEqual([{ answering_until: null }]);
    } finally {
      await owner.query(`DROP TRIGGER IF EXISTS refuse_answers ON core.chat_messages`);
      await owner.query(`DROP FUNCTION IF EXISTS ${fn}()`);
      await owner.end();
    }
    // The unanswered question is replaced by the next one at once (no 409 for ten minutes).
    const next = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, stream: false });
    expect(next.status).toBe(200);
    const shown = (await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.messages.map((m: { message_id: number }) => m.message_id);
    expect(shown).toContain(next.json.message_id);
  });

  it('ends a turn whose session was hard-deleted before its answer was stored: 404, and a stream that still ends with error and stop', async () => {
    // The database refuses this session's answers as it does once the session is gone: the foreign key's error
    // (23503). A trigger the schema owner adds for the test stands in for a delete that commits mid-turn.
    const ids = [await newSession(a.key), await newSession(a.key)];
    const owner = new Client({ connectionString: s.database.ownerUrl });
    await owner.connect();
    const fn = `core.gone_${ids[0]!.replace(/-/g, '')}`;
    try {
      await owner.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'session gone' USING ERRCODE = '23503'; END $$`);
      await owner.query(`CREATE TRIGGER gone BEFORE INSERT ON core.chat_messages FOR EACH ROW WHEN (NEW.message_type = 'assistant' AND NEW.session_id IN ('${ids[0]}', '${ids[1]}')) EXECUTE FUNCTION ${fn}()`);
      const complete = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: ids[0], stream: false });
      expect([complete.status, complete.json]).toEqual([404, { detail: expect.stringMatching(/deleted while its answer was written/) }]);
      const streamed = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: ids[1], stream: true });
      expect(streamed.status).toBe(200);
      const all = parts(streamed.text);
      expect(all.slice(-2)).toEqual([
        { type: 'error', error: expect.stringMatching(/deleted while its answer was written/) },
        { type: 'stop', message_id: null, chat_session_id: ids[1], stop_reason: 'error' },
      ]);
    } finally {
      await owner.query(`DROP TRIGGER IF EXISTS gone ON core.chat_messages`);
      await owner.query(`DROP FUNCTION IF EXISTS ${fn}()`);
      await owner.end();
    }
  });

  it('records feedback on answers only, replaces it, and removes it', async () => {
    const id = await newSession(a.key);
    const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, stream: false });
    const answerId = r.json.message_id as number;
    expect((await s.call('POST', '/api/chat/create-chat-message-feedback', as(a.key), { chat_message_id: answerId, is_positive: true })).status).toBe(200);
    expect((await s.call('POST', '/api/chat/create-chat-message-feedback', as(a.key), { chat_message_id: answerId, is_positive: false, feedback_text: 'too short' })).status).toBe(200);
    const rows = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ is_positive: boolean; feedback_text: string }>(`SELECT is_positive, feedback_text FROM core.chat_feedback WHERE message_id = $1`, [answerId]));
    expect(rows.rows).toEqual([{ is_positive: false, feedback_text: 'too short' }]);
    const userMsg = (await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.messages[1].message_id;
    expect((await s.call('POST', '/api/chat/create-chat-message-feedback', as(a.key), { chat_message_id: userMsg, is_positive: true })).status).toBe(400);
    expect((await s.call('POST', '/api/chat/create-chat-message-feedback', as(b.key), { chat_message_id: answerId, is_positive: true })).status).toBe(404);
    expect((await s.call('POST', '/api/chat/create-chat-message-feedback', as(a.key), { chat_message_id: answerId })).status).toBe(422);
    expect((await s.call('DELETE', `/api/chat/remove-chat-message-feedback?chat_message_id=${answerId}`, as(a.key))).status).toBe(200);
    expect((await s.call('DELETE', `/api/chat/remove-chat-message-feedback?chat_message_id=${answerId}`, as(a.key))).status).toBe(404);
    expect((await s.call('DELETE', '/api/chat/remove-chat-message-feedback', as(a.key))).status).toBe(422);
    // A deleted session cannot be changed: its answers take no feedback, and theirs cannot be removed.
    expect((await s.call('POST', '/api/chat/create-chat-message-feedback', as(a.key), { chat_message_id: answerId, is_positive: true })).status).toBe(200);
    expect((await s.call('DELETE', `/api/chat/delete-chat-session/${id}`, as(a.key))).status).toBe(200);
    expect((await s.call('POST', '/api/chat/create-chat-message-feedback', as(a.key), { chat_message_id: answerId, is_positive: false })).status).toBe(404);
    expect((await s.call('DELETE', `/api/chat/remove-chat-message-feedback?chat_message_id=${answerId}`, as(a.key))).status).toBe(404);
    const kept = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ is_positive: boolean }>(`SELECT is_positive FROM core.chat_feedback WHERE message_id = $1`, [answerId]));
    expect(kept.rows).toEqual([{ is_positive: true }]);
  });

  it('counts tokens with the tokenizer: the document budget of a persona, and what a session has left', async () => {
    const max = await s.call('GET', '/api/chat/max-selected-document-tokens?persona_id=0', as(a.key));
    expect(max.status).toBe(200);
    expect(max.json.max_tokens).toBeGreaterThan(1000);
    expect((await s.call('GET', '/api/chat/max-selected-document-tokens', as(a.key))).status).toBe(422);
    expect((await s.call('GET', '/api/chat/max-selected-document-tokens?persona_id=777', as(a.key))).status).toBe(404);
    const id = await newSession(a.key);
    const empty = (await s.call('GET', `/api/chat/available-context-tokens/${id}`, as(a.key))).json.available_tokens as number;
    await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, stream: false });
    const used = (await s.call('GET', `/api/chat/available-context-tokens/${id}`, as(a.key))).json.available_tokens as number;
    // The question alone is more than ten tokens; the answer adds more.
    expect(empty - used).toBeGreaterThan(10);
    expect((await s.call('GET', `/api/chat/available-context-tokens/${id}`, as(b.key))).status).toBe(404);
  });

  it('refuses bad input with the spec\'s shapes', async () => {
    const id = await newSession(a.key);
    const huge = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'x'.repeat(20_001), chat_session_id: id });
    expect(huge.status).toBe(422);
    expect(huge.json.detail[0].loc).toEqual(['body', 'message']);
    // Blank, or only invisible characters (zero-width space, joiner, BOM): nothing to answer.
    for (const message of ['   ', '\u200b\u200b', ' \u200d\ufeff ']) {
      const blank = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message, chat_session_id: id });
      expect([blank.status, blank.json.detail[0].loc]).toEqual([422, ['body', 'message']]);
    }
    expect((await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: id, message: '\u200b' })).status).toBe(422);
    const forced = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, forced_tool_id: 99 });
    expect(forced.status).toBe(400);
    expect(forced.json).toEqual({ detail: expect.any(String) });
    // A tool id below 1 is invalid (422) whether forced or allowed; an unknown one is 400, as in a persona's tool_ids.
    const zero = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, forced_tool_id: 0 });
    expect([zero.status, zero.json.detail[0].loc]).toEqual([422, ['body', 'forced_tool_id']]);
    const unknownTool = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, allowed_tool_ids: [99] });
    expect([unknownTool.status, unknownTool.json.detail]).toEqual([400, expect.stringMatching(/unknown tool id\(s\).*99/)]);
    expect((await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: id, message: QUESTION, allowed_tool_ids: [1, 99] })).status).toBe(400);
    // A seeded message is checked as a sent one is: only spaces or invisible characters is 422, and nothing is made.
    const before = (await s.call('GET', '/api/chat/get-user-chat-sessions', as(a.key))).json.sessions.length as number;
    for (const message of ['   \u200b  ', '']) {
      const seeded = await s.call('POST', '/api/chat/seed-chat-session', as(a.key), { persona_id: 0, message });
      expect([seeded.status, seeded.json.detail[0].loc]).toEqual([422, ['body', 'message']]);
    }
    expect((await s.call('GET', '/api/chat/get-user-chat-sessions', as(a.key))).json.sessions).toHaveLength(before);
    const unknown = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.status).toBe(404);
    // Message ids are 64-bit in the store: one past 2^31 is a message that is not there (404), not an invalid id.
    for (const parent of [2_000_000_000, 2 ** 31 + 5, Number.MAX_SAFE_INTEGER]) {
      const badParent = await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: id, parent_message_id: parent, message: 'hi' });
      expect(badParent.status).toBe(404);
    }
    expect((await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: id, parent_message_id: 2 ** 53, message: 'hi' })).status).toBe(422);
    const nothingToAnswer = await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: id, use_existing_user_message: true });
    expect(nothingToAnswer.status).toBe(400);
    const notUuid = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: 'abc' });
    expect(notUuid.json.detail[0].loc).toEqual(['body', 'chat_session_id']);
    // Nothing was stored by the refused requests: the session still has only its root.
    const d = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
    expect(d.json.messages).toHaveLength(1);
    // The streamed route answers core's own document, and core's listener is reachable only with an identity.
    expect((await http(s.coreServer.url, 'POST', '/api/chat/send-chat-message', { body: { message: QUESTION, chat_session_id: id } })).status).toBe(401);
  });

  it('cancels a turn whose client left while it was being prepared, and stores it as cancelled', async () => {
    for (const [route, extra] of [['/api/chat/send-message', {}], ['/api/chat/send-chat-message', { stream: false }]] as const) {
      const id = await newSession(a.key);
      // Another transaction holds the session's row, so the turn waits in its preparation, before any byte is sent.
      let release!: () => void;
      const released = new Promise<void>((done) => (release = done));
      const holding = s.db.withTenant(a.tenantId, async (sql) => {
        await sql.query('SELECT 1 FROM core.chat_sessions WHERE tenant_id = $1 AND session_id = $2 FOR UPDATE', [a.tenantId, id]);
        await released;
      });
      const body = JSON.stringify({ chat_session_id: id, message: QUESTION, ...extra });
      const req = request(`${s.gateway.publicUrl}${route}`, { method: 'POST', headers: { ...as(a.key), 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
      req.on('error', () => undefined);
      req.on('response', (res) => res.resume());
      req.end(body);
      try {
        let waiting = 0;
        for (let i = 0; i < 100 && waiting === 0; i++) {
          await new Promise((res) => setTimeout(res, 50));
          const r = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%core.chat_sessions%'`));
          waiting = r.rows[0]!.n;
        }
        expect(waiting).toBe(1);
        // The client leaves; the gateway closes its request to core, which hears it while the turn still waits.
        req.destroy();
        await new Promise((res) => setTimeout(res, 1_000));
      } finally {
        release();
        await holding;
      }
      let messages: Array<{ message_type: string; message: string; error: string | null }> = [];
      for (let i = 0; i < 100 && messages.length < 3; i++) {
        await new Promise((res) => setTimeout(res, 100));
        messages = (await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.messages;
      }
      // Until 2026-11-30 the turn ran on and its answer was stored as a finished one (error null).
      expect({ route, answer: messages.slice(1).map((m) => [m.message_type, m.message === QUESTION ? 'question' : m.message, m.error]) })
        .toEqual({ route, answer: [['user', 'question', null], ['assistant', '', 'the answer was cancelled']] });
      // The question is answered (cancelled), so the session takes its next turn at once.
      expect((await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, stream: false })).status).toBe(200);
    }
  });

  it('trims a message before checking its length, on every route that takes one', async () => {
    // 19,990 characters and 20 trailing spaces: 20,010 sent, 19,990 after the trim.
    const text = `${'fog horn '.repeat(2_300).slice(0, 19_989)}x${' '.repeat(20)}`;
    expect(text.length).toBe(20_010);
    const id = await newSession(a.key);
    // Until 2026-11-30 send-message checked before trimming: 422 where the others answered 200.
    const sent = await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: id, message: text });
    expect(sent.status).toBe(200);
    expect(parts(sent.text).at(-1)).toMatchObject({ type: 'stop', stop_reason: 'finished' });
    expect((await s.call('POST', '/api/chat/send-chat-message', as(a.key), { chat_session_id: await newSession(a.key), message: text, stream: false })).status).toBe(200);
    expect((await s.call('POST', '/api/chat/seed-chat-session', as(a.key), { persona_id: 0, message: text })).status).toBe(200);
    // Longer than 20,000 once trimmed is still 422 everywhere.
    const over = `${text.trimEnd()}${'y'.repeat(11)}  `;
    for (const [route, body] of [
      ['/api/chat/send-message', { chat_session_id: id, message: over }],
      ['/api/chat/send-chat-message', { chat_session_id: id, message: over }],
      ['/api/chat/seed-chat-session', { persona_id: 0, message: over }],
    ] as const) {
      const r = await s.call('POST', route, as(a.key), body);
      expect([route, r.status, r.json.detail?.[0]?.loc]).toEqual([route, 422, ['body', 'message']]);
    }
  });

  it('never leaves a session nameless from its first question, and refuses a name with nothing to read', async () => {
    // The first character (a letter under 300 accents) is longer than the whole name: cut between code points.
    const accented = `a${'\u0301'.repeat(300)} fog horn?`;
    const name = `a${'\u0301'.repeat(119)}`;
    const id = await newSession(a.key);
    expect((await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: accented, chat_session_id: id, stream: false })).status).toBe(200);
    // Until 2026-11-30 both were named '' (and the seeded one stayed so once answered).
    expect((await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.description).toBe(name);
    const seeded = (await s.call('POST', '/api/chat/seed-chat-session', as(a.key), { persona_id: 0, message: accented })).json.chat_session_id as string;
    expect((await s.call('GET', `/api/chat/get-chat-session/${seeded}`, as(a.key))).json.description).toBe(name);
    // A name of only invisible characters is refused, as such a message is; a description of them is no name.
    for (const invisible of ['\u200b', ' \u2060\ufeff ']) {
      const renamed = await s.call('PUT', '/api/chat/rename-chat-session', as(a.key), { chat_session_id: id, name: invisible });
      expect([renamed.status, renamed.json.detail[0].loc]).toEqual([422, ['body', 'name']]);
      const patched = await s.call('PATCH', `/api/chat/chat-session/${id}`, as(a.key), { name: invisible });
      expect([patched.status, patched.json.detail[0].loc]).toEqual([422, ['body', 'name']]);
      const created = (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 0, description: invisible })).json.chat_session_id as string;
      expect((await s.call('GET', `/api/chat/get-chat-session/${created}`, as(a.key))).json.description).toBe('');
    }
    expect((await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.description).toBe(name);
  });

  it('answers the document budget of a deleted persona, whose sessions still answer', async () => {
    const persona = (await s.call('POST', '/api/persona', as(a.key), { name: 'Short-lived', instructions: 'Answer about lighthouses in one sentence.', tool_ids: [1] })).json.id as number;
    const budget = (await s.call('GET', `/api/chat/max-selected-document-tokens?persona_id=${persona}`, as(a.key))).json.max_tokens as number;
    expect(budget).toBeGreaterThan(1000);
    const id = (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: persona })).json.chat_session_id as string;
    expect((await s.call('DELETE', `/api/persona/${persona}`, as(a.key))).status).toBe(204);
    expect((await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: QUESTION, chat_session_id: id, stream: false })).status).toBe(200);
    // Until 2026-11-30: 404 `persona not found`.
    const after = await s.call('GET', `/api/chat/max-selected-document-tokens?persona_id=${persona}`, as(a.key));
    expect([after.status, after.json]).toEqual([200, { max_tokens: budget }]);
    // Still the tenant's own: another tenant's key does not find it.
    expect((await s.call('GET', `/api/chat/max-selected-document-tokens?persona_id=${persona}`, as(b.key))).status).toBe(404);
  });
});
