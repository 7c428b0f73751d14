/**
 * Chat answers with an OpenAI-format model on loopback (the test world's model): the model decides to call
 * internal_search with its own queries (OpenAI tool calls), its invented citation markers are removed by the one
 * checker, a forced tool skips the decision, and a model that fails mid-answer leaves an error part and a stored,
 * failed answer — never a half-written one.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAiLanguageModel } from '@lore/ai';
import { closeIdleHttpConnections } from '../support/http';
import { LoopbackModel } from '../support/loopback-model';
import type { TenantFixture } from '../gateway/harness';
import { startCoreStack, type CoreStack } from './harness';

type Part = { type: string; [k: string]: unknown };

/** Between core and the graph: forwards every request, and keeps the query of each retrieval core asks for. */
async function retrievalRecorder(): Promise<{ server: Server; url: string; target: string; queries: string[] }> {
  const rec = { server: null as unknown as Server, url: '', target: '', queries: [] as string[] };
  rec.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url === '/api/v1/memory/retrieve') rec.queries.push((JSON.parse(body.toString('utf8')) as { query: string }).query);
      const target = new URL(req.url ?? '/', rec.target);
      const out = request(target, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      out.on('error', () => res.destroy());
      out.end(body);
    });
  });
  await new Promise<void>((resolve) => rec.server.listen(0, '127.0.0.1', resolve));
  rec.url = `http://127.0.0.1:${(rec.server.address() as AddressInfo).port}`;
  return rec;
}
const parts = (text: string): Part[] => text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Part);

describe('core: chat answers with an OpenAI-format model', () => {
  let model: LoopbackModel;
  let s: CoreStack;
  let a: TenantFixture;
  let docId: string;
  let recorder: Awaited<ReturnType<typeof retrievalRecorder>>;
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  beforeAll(async () => {
    model = await new LoopbackModel().start();
    recorder = await retrievalRecorder();
    s = await startCoreStack({
      languageModel: new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 5_000, retries: 0 }),
      graphUrl: (url) => {
        recorder.target = url;
        return recorder.url;
      },
    });
    a = await s.tenant();
    const ingest = await s.call('POST', '/api/v1/memory/ingest', { 'x-api-key': a.key }, {
      content: 'The Osprey data center runs on solar power since 2022. Its backup generators burn biodiesel.',
      content_type: 'text', routing: { mode: 'auto' },
    });
    expect(ingest.status).toBe(200);
    docId = ingest.json.doc_id as string;
    for (let i = 0; i < 100; i++) {
      const r = await s.call('POST', '/api/v1/memory/retrieve', { 'x-api-key': a.key }, { query: 'Osprey solar power' });
      if (r.json.chunks?.some((c: { document_id: string }) => c.document_id === docId)) break;
      await new Promise((res) => setTimeout(res, 200));
    }
  }, 60_000);
  afterAll(async () => {
    await s?.close();
    await model?.stop();
    await new Promise((resolve) => recorder?.server.close(resolve));
    closeIdleHttpConnections();
  });
  beforeEach(() => {
    model.turns = [];
    model.script = null;
    model.failAfter = null;
    model.bodies = [];
    model.reply = null;
    recorder.queries = [];
  });

  async function newSession(personaId = 0): Promise<string> {
    return (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: personaId })).json.chat_session_id as string;
  }

  it('searches with the queries the model chose, and cites what it found', async () => {
    model.turns = [{ tool_calls: [{ name: 'internal_search', arguments: { queries: ['Osprey data center power source'] } }] }];
    const id = await newSession();
    const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'How is the Osprey site powered?', chat_session_id: id, stream: false });
    expect(r.status).toBe(200);
    // The decision request offered internal_search with the persona's instructions first.
    const decision = model.bodies[0]!;
    expect(decision.tools?.map((t) => t.function.name)).toEqual(['internal_search']);
    expect(decision.messages?.[0]).toMatchObject({ role: 'system' });
    expect(r.json.tool_calls[0].tool_arguments).toEqual({ queries: ['Osprey data center power source'] });
    expect(r.json.top_documents[0].document_id).toBe(docId);
    expect(r.json.answer).toMatch(/solar power since 2022 \[1\]/);
    expect(r.json.citation_info).toEqual([{ citation_num: 1, document_id: docId }]);
  });

  it('retrieves the question as the turn arrives: a search for the question itself is that retrieval, not a second one', async () => {
    // The model searches for the user's own words (as the embedded model always does).
    model.reply = (body) => (body.tools?.length ? { tool_calls: [{ name: 'internal_search', arguments: { queries: [body.messages!.at(-1)!.content] } }] } : null);
    const question = 'Which fuel do the Osprey backup generators burn?';
    const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: question, chat_session_id: await newSession(), stream: false });
    expect(r.status).toBe(200);
    expect(r.json.tool_calls[0].tool_arguments).toEqual({ queries: [question] });
    expect(r.json.top_documents[0].document_id).toBe(docId);
    expect(recorder.queries).toEqual([question]);

    // A model that searches for words of its own: those are retrieved too, and are the search the answer reports.
    recorder.queries = [];
    model.reply = (body) => (body.tools?.length ? { tool_calls: [{ name: 'internal_search', arguments: { queries: ['zzqx nothing matches this'] } }] } : null);
    const rewritten = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: question, chat_session_id: await newSession(), stream: false });
    expect(rewritten.status).toBe(200);
    expect(recorder.queries.sort()).toEqual([question, 'zzqx nothing matches this'].sort());
    expect(rewritten.json.tool_calls[0].tool_arguments).toEqual({ queries: ['zzqx nothing matches this'] });

    // A turn refused (no such session) answers its error; whatever the early retrieval found is never seen.
    const refused = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: question, chat_session_id: '00000000-0000-4000-8000-000000000000', stream: false });
    expect(refused.status).toBe(404);
    // A request that allows no search retrieves nothing, early or late.
    recorder.queries = [];
    model.reply = null;
    const noSearch = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: question, chat_session_id: await newSession(), stream: false, allowed_tool_ids: [] });
    expect(noSearch.status).toBe(200);
    expect(noSearch.json.tool_calls).toEqual([]);
    expect(recorder.queries).toEqual([]);

    // Answering an existing user message has no new question to retrieve early: its search is the only retrieval.
    const id = await newSession();
    const first = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: question, chat_session_id: id, stream: false, forced_tool_id: 1 });
    const asked = (await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.messages.find((m: { message_type: string }) => m.message_type === 'user') as { message_id: number };
    recorder.queries = [];
    const again = await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: id, parent_message_id: asked.message_id, use_existing_user_message: true, forced_tool_id: 1 });
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(parts(again.text).find((p) => p.type === 'tool_call')).toMatchObject({ tool_arguments: { queries: [question] } });
    expect(recorder.queries).toEqual([question]);
  });

  it('removes markers the model invents', async () => {
    model.turns = [{ tool_calls: [{ name: 'internal_search', arguments: { queries: ['Osprey'] } }] }, { content: 'The Osprey data center runs on solar power [7].' }];
    const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'How is the Osprey site powered?', chat_session_id: await newSession(), stream: false });
    expect(r.json.answer).not.toMatch(/\[7\]/);
    expect(r.json.citation_info.every((c: { citation_num: number }) => c.citation_num !== 7)).toBe(true);
  });

  it('answers without searching when the model says so, and a persona without tools never offers one', async () => {
    model.turns = [{ content: 'Hello! Ask me about your documents.' }, { content: 'Hello! Ask me about your documents.' }];
    const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'hi there', chat_session_id: await newSession(), stream: false });
    expect(r.json.tool_calls).toEqual([]);
    expect(r.json.top_documents).toEqual([]);
    expect(r.json.answer).toBe('Hello! Ask me about your documents.');

    const persona = await s.call('POST', '/api/persona', as(a.key), { name: 'Smalltalk', tool_ids: [] });
    model.bodies = [];
    model.turns = [{ content: 'Just chatting.' }];
    const plain = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'How is the Osprey site powered?', chat_session_id: await newSession(persona.json.id), stream: false });
    expect(plain.json.answer).toBe('Just chatting.');
    expect(model.bodies).toHaveLength(1);
    expect(model.bodies[0]!.tools ?? []).toEqual([]);
    // A tool the persona does not allow cannot be forced.
    expect((await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'x', chat_session_id: await newSession(persona.json.id), forced_tool_id: 1 })).status).toBe(400);
  });

  it('asks the provider for the session\'s model and temperature, else the persona\'s', async () => {
    const persona = await s.call('POST', '/api/persona', as(a.key), { name: 'Tuned', tool_ids: [1], model: 'persona-model', temperature: 0.2 });
    const id = await newSession(persona.json.id);
    await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'Osprey backup generators', chat_session_id: id, stream: false, forced_tool_id: 1 });
    expect(model.bodies.at(-1)).toMatchObject({ model: 'persona-model', temperature: 0.2 });
    await s.call('PUT', '/api/chat/update-chat-session-model', as(a.key), { chat_session_id: id, new_alternate_model: 'session-model' });
    await s.call('PUT', '/api/chat/update-chat-session-temperature', as(a.key), { chat_session_id: id, temperature_override: 0.9 });
    model.bodies = [];
    await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'Osprey backup generators', chat_session_id: id, stream: false });
    // The decision and the answer both went to the session's model.
    expect(model.bodies).toHaveLength(2);
    for (const body of model.bodies) expect(body).toMatchObject({ model: 'session-model', temperature: 0.9 });
    // A session on the default persona uses the configured model.
    model.bodies = [];
    await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'Osprey backup generators', chat_session_id: await newSession(), stream: false, forced_tool_id: 1 });
    expect(model.bodies.at(-1)).toMatchObject({ model: 'loopback', temperature: 0 });
  });

  it('gives the model the last ten messages of the branch it continues, in a long session and after branch switches', async () => {
    model.script = 'Noted.';
    const id = await newSession();
    const send = (message: string) => s.call('POST', '/api/chat/send-chat-message', as(a.key), { message, chat_session_id: id, stream: false });
    /** The user messages of the last request to the model, in order (the history's, then the question). */
    const asked = () => (model.bodies.at(-1)!.messages ?? []).filter((m) => m.role === 'user').map((m) => m.content);
    for (let i = 1; i <= 7; i++) expect((await send(`question ${i}`)).status).toBe(200);
    model.bodies = [];
    expect((await send('question 8')).status).toBe(200);
    // Ten earlier messages: five questions and their five answers.
    expect(asked()).toEqual(['question 3', 'question 4', 'question 5', 'question 6', 'question 7', 'question 8']);
    expect((model.bodies.at(-1)!.messages ?? []).filter((m) => m.role === 'assistant')).toHaveLength(5);

    const tree = (await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.messages as Array<{ message_id: number; message: string }>;
    const [, , firstAnswer, secondQuestion] = tree;
    expect(secondQuestion!.message).toBe('question 2');
    // An edit of question 2 starts a branch under the first answer; the next turn continues that branch.
    const edit = await s.call('POST', '/api/chat/send-message', as(a.key), { chat_session_id: id, parent_message_id: firstAnswer!.message_id, message: 'question 2b' });
    expect(parts(edit.text).at(-1)).toMatchObject({ type: 'stop', stop_reason: 'finished' });
    model.bodies = [];
    expect((await send('question 9')).status).toBe(200);
    expect(asked()).toEqual(['question 1', 'question 2b', 'question 9']);
    // Back to the first branch: the next turn continues from its leaf, the answer to question 8.
    expect((await s.call('PUT', '/api/chat/set-message-as-latest', as(a.key), { message_id: secondQuestion!.message_id })).status).toBe(200);
    model.bodies = [];
    expect((await send('question 10')).status).toBe(200);
    expect(asked()).toEqual(['question 4', 'question 5', 'question 6', 'question 7', 'question 8', 'question 10']);

    // A damaged tree (a latest-child pointer back to an ancestor, which no write makes) cannot loop a turn.
    const leaf = (await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.messages.at(-1) as { message_id: number };
    await s.db.withTenant(a.tenantId, (sql) => sql.query(`UPDATE core.chat_messages SET latest_child_message_id = $2 WHERE tenant_id = $1 AND message_id = $3`, [a.tenantId, secondQuestion!.message_id, leaf.message_id]));
    expect((await send('question 11')).status).toBe(200);
  });

  it('writes a searched answer with the persona\'s instructions and the conversation before the question', async () => {
    const persona = await s.call('POST', '/api/persona', as(a.key), { name: 'Pirate', instructions: 'Talk like a pirate.', tool_ids: [1] });
    const id = await newSession(persona.json.id);
    const ask = (message: string) => s.call('POST', '/api/chat/send-chat-message', as(a.key), { message, chat_session_id: id, stream: false, forced_tool_id: 1 });
    expect((await ask('How is the Osprey site powered?')).status).toBe(200);
    model.bodies = [];
    const followUp = await ask('And its backup generators?');
    expect(followUp.json.answer).toMatch(/solar power since 2022 \[1\]/);
    // The answer call: the grounding rules with the persona's instructions, the earlier turn (its answer without
    // the markers that numbered other sources), then the sources and the question.
    const messages = model.bodies.at(-1)!.messages!;
    expect(messages[0]).toMatchObject({ role: 'system', content: expect.stringMatching(/numbered sources[\s\S]*Talk like a pirate\.$/) });
    expect(messages.slice(1, 3)).toEqual([{ role: 'user', content: 'How is the Osprey site powered?' }, { role: 'assistant', content: 'The Osprey data center runs on solar power since 2022.' }]);
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringMatching(/^Sources:[\s\S]*Question: And its backup generators\?$/) });
  });

  it('searches with the first three queries of a call that asks more, and with the question when its arguments are not JSON', async () => {
    const ask = async (args: unknown) => {
      model.turns = [{ tool_calls: [{ name: 'internal_search', arguments: args }] }];
      recorder.queries = [];
      const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'Osprey backup generators', chat_session_id: await newSession(), stream: false });
      expect([r.status, r.json.error_msg]).toEqual([200, null]);
      return r;
    };
    const many = await ask({ queries: ['Osprey power', 'Osprey solar', 'Osprey generators', 'Osprey fuel', 'Osprey biodiesel'] });
    expect(many.json.tool_calls[0].tool_arguments).toEqual({ queries: ['Osprey power', 'Osprey solar', 'Osprey generators'] });
    expect(many.json.top_documents[0].document_id).toBe(docId);
    expect(many.json.answer).toMatch(/\[1\]/);
    const broken = await ask('{not json');
    expect(broken.json.tool_calls[0].tool_arguments).toEqual({ queries: ['Osprey backup generators'] });
    expect(recorder.queries).toEqual(['Osprey backup generators']);
    expect(broken.json.answer).toMatch(/\[1\]/);
  });

  it('skips the decision when the tool is forced', async () => {
    const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'Osprey backup generators', chat_session_id: await newSession(), stream: false, forced_tool_id: 1 });
    expect(r.json.tool_calls[0].tool_arguments).toEqual({ queries: ['Osprey backup generators'] });
    // Only the answer was asked of the model.
    expect(model.bodies).toHaveLength(1);
    expect(model.bodies[0]!.tools ?? []).toEqual([]);
  });

  it('reports a model that fails mid-answer as an error part, stores the failed answer, and lists the chat as failed', async () => {
    model.failAfter = 'The Osprey data center runs on';
    const id = await newSession();
    const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'How is the Osprey site powered?', chat_session_id: id, forced_tool_id: 1 });
    expect(r.status).toBe(200);
    const ps = parts(r.text);
    expect(ps.map((p) => p.type).slice(-2)).toEqual(['error', 'stop']);
    expect(ps.at(-1)).toMatchObject({ stop_reason: 'error' });
    const d = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
    const last = d.json.messages.at(-1);
    expect(last).toMatchObject({ message_type: 'assistant', error: expect.any(String) });
    // Nothing unchecked reached the client or the store: no partial sentence was sent.
    expect(ps.filter((p) => p.type === 'answer_delta')).toEqual([]);
    expect(last.message).toBe('');
    const listed = await s.call('GET', '/api/chat/get-user-chat-sessions', as(a.key));
    expect(listed.json.sessions.map((x: { id: string }) => x.id)).not.toContain(id);
    const withFailed = await s.call('GET', '/api/chat/get-user-chat-sessions?include_failed_chats=true', as(a.key));
    expect(withFailed.json.sessions.map((x: { id: string }) => x.id)).toContain(id);
  });
});
