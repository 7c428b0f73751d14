/**
 * Connector indexing end to end on real PostgreSQL, Redis and Kafka: administrators make pairs through the gateway,
 * core's scheduler and its `lore.connectors.index` consumer run the attempts, and the documents land in the
 * tenant's memory through the graph service's pipeline, where chat and the memory API find them. A loopback web
 * (test/support/loopback-web.ts) is the site; the truth a run is compared with is the same source driven directly.
 * See "Indexing" in docs/core.md.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { GraphConnectorDocuments } from '@lore/core';
import { createLogger, IdentitySigner, PostgresBlobStore } from '@lore/runtime';
import { DEFAULT_INDEXING_SETTINGS, scheduleTick } from '../../services/core/src/application/indexing';
import { consume, createWebFetcher, WebSource, type WebSourceConfig } from '../../services/core/src/connectors';
import { closeIdleHttpConnections } from '../support/http';
import { TEST_ENCRYPTION_KEYS } from '../support/encryption';
import { requireEnv, uniqueSuffix } from '../support/infra';
import { adminCall, IDENTITY_SECRET, type TenantFixture } from '../gateway/harness';
import { LoopbackWeb } from '../support/loopback-web';
import { type CoreStack, eventually, startCoreStack } from './harness';

jest.setTimeout(180_000);

type Json = Record<string, any>;
const ROOT = join(__dirname, '..', '..');
const as = (key: string) => ({ authorization: `Bearer ${key}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


/** Admin calls of one tenant through the gateway. */
function admin(s: CoreStack, key: string) {
  return {
    async connector(body: Json): Promise<number> {
      const r = await s.call('POST', '/api/manage/admin/connector', as(key), { input_type: 'load_state', refresh_freq: 3600, prune_freq: null, indexing_start: null, access_type: 'public', groups: [], ...body });
      expect(r.status).toBe(200);
      return r.json.id as number;
    },
    async credential(source: string): Promise<number> {
      const r = await s.call('POST', '/api/manage/credential', as(key), { name: `${source} ${uniqueSuffix()}`, source, credential_json: {} });
      expect(r.status).toBe(201);
      return r.json.id as number;
    },
    async pair(connectorId: number, credentialId: number, body: Json = {}): Promise<Json> {
      const r = await s.call('PUT', `/api/manage/connector/${connectorId}/credential/${credentialId}`, as(key), body);
      expect(r.status).toBe(200);
      return r.json as Json;
    },
    async info(pairId: number): Promise<Json> {
      const r = await s.call('GET', `/api/manage/admin/cc-pair/${pairId}`, as(key));
      expect(r.status).toBe(200);
      return r.json as Json;
    },
    runOnce(connectorId: number, body: Json = {}) {
      return s.call('POST', '/api/manage/admin/connector/run-once', as(key), { connector_id: connectorId, ...body });
    },
    /** Waits for the pair's attempt `attemptId` to end, and answers it. */
    async ended(pairId: number, attemptId: number): Promise<Json> {
      return eventually(`attempt ${attemptId} to end`, async () => {
        const r = await s.call('GET', `/api/manage/admin/cc-pair/${pairId}/index-attempts`, as(key));
        expect(r.status).toBe(200);
        const a = (r.json.index_attempts as Json[]).find((x) => x.id === attemptId);
        return a && !['not_started', 'in_progress'].includes(a.status as string) ? a : undefined;
      });
    },
  };
}

/** The graph's documents of a pair in the tenant's memory: source id → doc id and status (read as the tenant). */
async function memoryDocuments(s: CoreStack, tenantId: string, pairId: number): Promise<Map<string, { doc_id: string; status: string; chunks: number }>> {
  const r = await s.db.withTenant(tenantId, (sql) =>
    sql.query<{ external_id: string; doc_id: string; status: string; chunks: number }>(
      `SELECT d.external_id, d.doc_id, d.status, (SELECT count(*)::int FROM graph.chunks c WHERE c.tenant_id = d.tenant_id AND c.doc_id = d.doc_id) AS chunks
         FROM graph.documents d WHERE d.tenant_id = $1 AND d.cc_pair_id = $2`,
      [tenantId, pairId],
    ),
  );
  return new Map(r.rows.map((x) => [x.external_id, { doc_id: x.doc_id, status: x.status, chunks: x.chunks }]));
}

/** Waits until the graph worker indexed every document of the pair (chunks written). */
function allIndexed(s: CoreStack, tenantId: string, pairId: number, count: number) {
  return eventually(`${count} documents of pair ${pairId} indexed`, async () => {
    const docs = await memoryDocuments(s, tenantId, pairId);
    return docs.size === count && [...docs.values()].every((d) => d.status === 'indexed') ? docs : undefined;
  });
}

async function retrieve(s: CoreStack, key: string, query: string, body: Json = {}): Promise<Json[]> {
  const r = await s.call('POST', '/api/v1/memory/retrieve', { 'x-api-key': key }, { query, ...body });
  expect(r.status).toBe(200);
  return r.json.chunks as Json[];
}

/** What the web source itself yields for `config` now (the truth a run is compared with). */
async function sourceTruth(web: LoopbackWeb, config: WebSourceConfig): Promise<Map<string, string>> {
  const fetcher = createWebFetcher({ allowLoopback: true, lookup: web.lookup });
  try {
    const out = new Map<string, string>();
    const outcome = await consume(new WebSource(config, fetcher, { minDelayMs: 0 }).loadAll({ signal: new AbortController().signal }), (item) => {
      if (item.kind === 'document') out.set(item.document.id, item.document.text);
    });
    expect(outcome.stop).toBe('completed');
    return out;
  } finally {
    fetcher.close();
  }
}

/**
 * Between core and the graph service: passes every call on, but while `holding` (after `passing` more writes went
 * through) holds each connector-document write, not a deletion, until `release()`, and forwards it then even when
 * core stopped waiting for it, as a graph that had the request already would still apply it.
 */
interface WriteGate {
  url: string;
  target: string;
  holding: boolean;
  passing: number;
  held: Array<() => void>;
  /** The documents of every write that reached the gate, in order (passed or held). */
  sizes: number[];
  release(): void;
  close(): Promise<void>;
}

async function writeGate(): Promise<WriteGate> {
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const forward = () => {
        const t = new URL(gate.target);
        const out = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        });
        out.on('error', () => res.destroy());
        res.on('error', () => undefined);
        out.end(Buffer.concat(chunks));
      };
      if (req.url === '/internal/v1/connector-documents') {
        try {
          gate.sizes.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { documents: unknown[] }).documents.length);
        } catch {
          gate.sizes.push(-1);
        }
      }
      if (req.url === '/internal/v1/connector-documents' && gate.holding) {
        if (gate.passing > 0) gate.passing--;
        else return void gate.held.push(forward);
      }
      forward();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const gate: WriteGate = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    target: '',
    holding: false,
    passing: 0,
    held: [],
    sizes: [],
    release() {
      gate.holding = false;
      gate.passing = 0;
      for (const forward of gate.held.splice(0)) forward();
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
  return gate;
}

describe('core: indexing a web connector into the memory', () => {
  let s: CoreStack;
  let web: LoopbackWeb;
  let gate: WriteGate;
  let a: TenantFixture;
  let b: TenantFixture;

  beforeAll(async () => {
    web = await new LoopbackWeb({ seed: 23, crawlDelaySeconds: { alpha: 0, beta: 0 } }).start();
    gate = await writeGate();
    s = await startCoreStack({
      indexer: { sources: { lookup: web.lookup, web: { minDelayMs: 0 } }, settings: { heartbeatMs: 200, staleMs: 3_000, batchDocuments: 4 } },
      graphUrl: (url) => {
        gate.target = url;
        return gate.url;
      },
    });
    a = await s.tenant();
    b = await s.tenant();
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await gate?.close();
    await web?.close();
    closeIdleHttpConnections();
  });

  it('loads a site, re-indexes only a changed page on the next poll, and prunes a removed page', async () => {
    const api = admin(s, a.key);
    const config: WebSourceConfig = { base_url: `${web.siteUrl('alpha')}/`, web_connector_type: 'recursive' };
    const truth = await sourceTruth(web, config);
    expect(truth.size).toBeGreaterThan(5);

    const connectorId = await api.connector({ name: 'Alpha docs', source: 'web', connector_specific_config: config, prune_freq: 60 });
    const pair = await api.pair(connectorId, await api.credential('web'));
    expect(pair).toMatchObject({ status: 'ACTIVE', num_docs_indexed: 0, number_of_index_attempts: 0, indexing: false, last_successful_index_time: null });

    // The scheduler finds the new pair due; a second pass finds it running and starts nothing more.
    expect(await s.core.indexer!.tick()).toBe(1);
    expect(await s.core.indexer!.tick()).toBe(0);
    const first = (await api.info(pair.id as number)).latest_index_attempts[0] as Json;
    expect(first).toMatchObject({ kind: 'load', trigger: 'schedule', prune: false });
    const load = await api.ended(pair.id as number, first.id as number);
    expect(load).toMatchObject({ status: 'success', error_msg: null, new_docs_indexed: truth.size, total_docs_indexed: truth.size, docs_removed: 0 });

    const info = await api.info(pair.id as number);
    expect(info).toMatchObject({ num_docs_indexed: truth.size, number_of_index_attempts: 1, last_index_attempt_status: 'success', in_repeated_error_state: false, indexing: false });
    expect(info.last_successful_index_time).toEqual(expect.any(String));
    // Not due again before its refresh interval.
    expect(await s.core.indexer!.tick()).toBe(0);
    // Prometheus sees the run and its documents.
    const metrics = await s.coreMetrics.metrics();
    expect(metrics).toMatch(/lore_core_index_attempts_total\{kind="load",status="success"[^}]*\} 1\n/);
    expect(metrics).toMatch(new RegExp(`lore_core_index_documents_total\\{outcome="created"[^}]*\\} ${truth.size}\\n`));

    const indexed = await allIndexed(s, a.tenantId, pair.id as number, truth.size);
    expect(new Set(indexed.keys())).toEqual(new Set(truth.keys()));

    // The memory's retrieval finds a page by its own word, with the page's link and the connector's source type.
    const page = web.pages('alpha').find((p) => p.keyword && truth.has(p.url))!;
    const found = await retrieve(s, a.key, page.keyword!);
    expect(found[0]).toMatchObject({ link: page.url, source_type: 'web' });
    // Chat's search documents show them as spec 2 says.
    const session = await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 0 });
    const chat = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: page.keyword, chat_session_id: session.json.chat_session_id, stream: false });
    expect(chat.status).toBe(200);
    expect(chat.json.top_documents).toContainEqual(expect.objectContaining({ link: page.url, source_type: 'web', semantic_identifier: page.title }));
    const webOnly = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: page.keyword, chat_session_id: session.json.chat_session_id, stream: false, internal_search_filters: { source_type: ['google_drive'] } });
    expect(webOnly.json.top_documents).toEqual([]);

    // A page changes: the poll writes it alone; every other document (and its chunks) stays as it was.
    const changed = web.pages('alpha').find((p) => truth.has(p.url) && p.url !== page.url && p.contentType.startsWith('text/html'))!;
    const chunkMark = await s.db.withTenant(a.tenantId, async (sql) => Number((await sql.query<{ m: string }>(`SELECT coalesce(max(chunk_id), 0)::text AS m FROM graph.chunks`)).rows[0]!.m));
    web.change(changed.url, `<html><head><title>${changed.title}</title></head><body><p>Now about xylophone quarantine procedures.</p></body></html>`);
    const removed = [...truth.keys()].find((u) => u !== changed.url && u !== page.url && u !== config.base_url)!;
    web.remove(removed);

    const run = await api.runOnce(connectorId);
    expect(run.status).toBe(200);
    expect(run.json.attempts).toEqual([expect.objectContaining({ kind: 'poll', trigger: 'manual', prune: true, status: 'not_started' })]);
    const again = await api.runOnce(connectorId);
    expect(again.status).toBe(409);
    expect(again.json).toEqual({ detail: expect.stringContaining('already being indexed') });
    const poll = await api.ended(pair.id as number, run.json.attempts[0].id as number);
    expect(poll).toMatchObject({ status: 'success', new_docs_indexed: 1, docs_removed: 1, total_docs_indexed: truth.size - 1 });

    const after = await allIndexed(s, a.tenantId, pair.id as number, truth.size - 1);
    expect(after.has(removed)).toBe(false);
    expect(after.get(changed.url)!.doc_id).not.toBe(indexed.get(changed.url)!.doc_id);
    for (const [url, d] of after) if (url !== changed.url) expect(d.doc_id).toBe(indexed.get(url)!.doc_id);
    // Only the changed page was chunked and embedded again.
    const newChunks = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ doc_id: string }>(`SELECT DISTINCT doc_id FROM graph.chunks WHERE chunk_id > $1`, [chunkMark]));
    expect(newChunks.rows.map((r) => r.doc_id)).toEqual([after.get(changed.url)!.doc_id]);
    expect((await retrieve(s, a.key, 'xylophone quarantine'))[0]).toMatchObject({ link: changed.url });
    expect((await api.info(pair.id as number)).num_docs_indexed).toBe(truth.size - 1);

    // An unchanged site polled again writes nothing and embeds nothing.
    const quiet = await api.runOnce(connectorId);
    const quietEnd = await api.ended(pair.id as number, quiet.json.attempts[0].id as number);
    expect(quietEnd).toMatchObject({ status: 'success', new_docs_indexed: 0 });
    const chunkMark2 = await s.db.withTenant(a.tenantId, async (sql) => Number((await sql.query<{ m: string }>(`SELECT coalesce(max(chunk_id), 0)::text AS m FROM graph.chunks`)).rows[0]!.m));
    await sleep(500);
    const later = await s.db.withTenant(a.tenantId, (sql) => sql.query(`SELECT 1 FROM graph.chunks WHERE chunk_id > $1`, [chunkMark2]));
    expect(later.rows).toHaveLength(0);
  });

  it('keeps a private pair\'s documents from members outside its groups, and every pair\'s from other tenants, whatever they ask', async () => {
    const api = admin(s, a.key);
    // A user group of the tenant (the gateway's) with one member; the pair is private to it.
    const insider = await s.user(a.tenantId, 'member');
    const outsider = await s.user(a.tenantId, 'member');
    const group = await s.call('POST', '/api/manage/admin/user-group', as(a.key), { name: 'Beta readers', user_ids: [insider.userId] });
    expect(group.status).toBe(201);
    const groupId = group.json.id as number;
    const config: WebSourceConfig = { base_url: `${web.siteUrl('beta')}/`, web_connector_type: 'sitemap' };
    const connectorId = await api.connector({ name: 'Beta private', source: 'web', connector_specific_config: config, access_type: 'private', groups: [groupId] });
    const pair = await api.pair(connectorId, await api.credential('web'));
    expect(pair).toMatchObject({ access_type: 'private', groups: [groupId] });
    const run = await api.runOnce(connectorId);
    expect(run.status).toBe(200);
    const ended = await api.ended(pair.id as number, run.json.attempts[0].id as number);
    expect(ended.status).toBe('success');
    const docs = await allIndexed(s, a.tenantId, pair.id as number, ended.total_docs_indexed as number);
    const secret = web.pages('beta').find((p) => p.keyword && docs.has(p.url))!;

    // The tenant's administrator key sees it.
    expect((await retrieve(s, a.key, secret.keyword!)).map((c) => c.link)).toContain(secret.url);
    const ask = async (token: string) => {
      const session = await s.call('POST', '/api/chat/create-chat-session', as(token), { persona_id: 0 });
      expect(session.status).toBe(200);
      const r = await s.call('POST', '/api/chat/send-chat-message', as(token), { message: `${secret.keyword} ${secret.title}`, chat_session_id: session.json.chat_session_id, stream: false });
      expect(r.status).toBe(200);
      return r.json as Json;
    };
    const adminAnswer = await ask(a.key);
    expect(adminAnswer.top_documents.map((d: Json) => d.link)).toContain(secret.url);
    // The member in the pair's group gets it in chat, as the administrator does.
    const privateIds = new Set([...docs.values()].map((d) => d.doc_id));
    const insiderAnswer = await ask(insider.token);
    expect(insiderAnswer.top_documents.map((d: Json) => d.link)).toContain(secret.url);
    expect((insiderAnswer.top_documents as Json[]).some((d) => privateIds.has(d.document_id as string))).toBe(true);
    // A member outside the group never gets it, nor any of the pair's documents.
    const hidden = (answer: Json) => {
      for (const d of answer.top_documents as Json[]) expect(privateIds.has(d.document_id as string)).toBe(false);
      for (const call of answer.tool_calls as Json[]) for (const d of call.search_docs as Json[]) expect(privateIds.has(d.document_id as string)).toBe(false);
    };
    hidden(await ask(outsider.token));
    // Membership is read on every request: taken out of the group, the insider stops getting them at once.
    expect((await s.call('PATCH', `/api/manage/admin/user-group/${groupId}`, as(a.key), { user_ids: [outsider.userId] })).status).toBe(200);
    hidden(await ask(insider.token));
    expect((await ask(outsider.token)).top_documents.map((d: Json) => d.link)).toContain(secret.url);
    // Another tenant gets nothing of A's: neither its key nor a member of one of its own groups.
    const bMember = await s.user(b.tenantId, 'member');
    expect((await s.call('POST', '/api/manage/admin/user-group', as(b.key), { name: 'Beta readers', user_ids: [bMember.userId] })).status).toBe(201);
    const bMemberAnswer = await ask(bMember.token);
    hidden(bMemberAnswer);
    expect(bMemberAnswer.top_documents).toEqual([]);
    const bAnswer = await ask(b.key);
    expect(bAnswer.top_documents).toEqual([]);
    expect(await retrieve(s, b.key, secret.keyword!)).toEqual([]);
  });

  it('keeps a workspace\'s pairs, documents and graphs from credentials bound elsewhere, and memory content from credentials denied the memory', async () => {
    // A second workspace of tenant A, with its own memory, and a key bound to it: its pair indexes into that memory.
    const created = await s.call('POST', '/api/v1/workspaces', { 'x-api-key': a.key }, { name: `Second ${uniqueSuffix()}` });
    expect(created.status).toBe(201);
    const second = created.json as { workspace_id: string; primary_memory_id: string };
    const inSecond = await s.key(a.tenantId, { workspace_id: second.workspace_id });
    const api = admin(s, inSecond);
    const page = web.page('/docs/page-2.html')!;
    const connectorId = await api.connector({ name: 'Second workspace page', source: 'web', connector_specific_config: { base_url: page.url, web_connector_type: 'single' } });
    const credentialId = await api.credential('web');
    const pair = await api.pair(connectorId, credentialId);
    const pairId = pair.id as number;
    const run = await api.runOnce(connectorId);
    expect(run.status).toBe(200);
    expect((await api.ended(pairId, run.json.attempts[0].id as number)).status).toBe('success');
    const [doc] = [...(await allIndexed(s, a.tenantId, pairId, 1)).values()];

    // A key bound to the first workspace, and one scoped to its memory, find no trace of the pair: not listed, and
    // 404 to read, pause, list attempts of, run or delete; nothing they do reaches it.
    const inFirst = await s.key(a.tenantId, { workspace_id: a.workspaceId });
    const firstMemory = await s.key(a.tenantId, { scopes: { memories: [a.memoryId] } });
    for (const other of [inFirst, firstMemory]) {
      const listed = await s.call('GET', '/api/manage/admin/connector/status', as(other));
      expect(listed.status).toBe(200);
      expect((listed.json as Json[]).map((x) => x.cc_pair_id)).not.toContain(pairId);
      expect((await s.call('GET', `/api/manage/admin/cc-pair/${pairId}`, as(other))).status).toBe(404);
      expect((await s.call('GET', `/api/manage/admin/cc-pair/${pairId}/index-attempts`, as(other))).status).toBe(404);
      expect((await s.call('PUT', `/api/manage/admin/cc-pair/${pairId}/status`, as(other), { status: 'PAUSED' })).status).toBe(404);
      expect((await s.call('POST', '/api/manage/admin/connector/run-once', as(other), { connector_id: connectorId, credential_ids: [credentialId] })).status).toBe(404);
      expect((await s.call('POST', '/api/manage/admin/connector/run-once', as(other), { connector_id: connectorId })).status).toBe(404);
      expect((await s.call('POST', '/api/manage/admin/deletion-attempt', as(other), { connector_id: connectorId, credential_id: credentialId })).status).toBe(404);
      // Nor can it pair its own credential with the other workspace's connector (which would index that
      // workspace's source into its own memory), nor use the other workspace's stored credential, nor see it.
      const own = await s.call('POST', '/api/manage/credential', as(other), { name: `own ${uniqueSuffix()}`, source: 'web', credential_json: {} });
      expect(own.status).toBe(201);
      expect(await s.call('PUT', `/api/manage/connector/${connectorId}/credential/${own.json.id}`, as(other), {})).toMatchObject({ status: 404, json: { detail: 'connector not found' } });
      const ownConnector = await s.call('POST', '/api/manage/admin/connector', as(other), { name: 'own', source: 'web', input_type: 'load_state', connector_specific_config: { base_url: page.url, web_connector_type: 'single' }, refresh_freq: 3600, prune_freq: null, indexing_start: null, access_type: 'public', groups: [] });
      expect(ownConnector.status).toBe(200);
      expect(await s.call('PUT', `/api/manage/connector/${ownConnector.json.id}/credential/${credentialId}`, as(other), {})).toMatchObject({ status: 404, json: { detail: 'credential not found' } });
      expect((await s.call('GET', `/api/manage/credential/${credentialId}`, as(other))).status).toBe(404);
      expect(((await s.call('GET', '/api/manage/credential', as(other))).json as Json[]).map((c) => c.id)).not.toContain(credentialId);
    }
    expect((await api.info(pairId)).status).toBe('ACTIVE');
    expect((await memoryDocuments(s, a.tenantId, pairId)).size).toBe(1);
    // The tenant-wide key sees it.
    expect((await s.call('GET', `/api/manage/admin/cc-pair/${pairId}`, as(a.key))).status).toBe(200);

    // Knowledge graphs: an ingest by the first workspace's key reads only its own workspace's documents, and a graph
    // holding the second workspace's documents is absent to it (and to a key denied the memory).
    const graphJob = async (key: string, listId: string) => {
      const r = await s.call('POST', '/memory/ingest/connectors', as(key), { list_id: listId, source_types: null, mode: 'full', graph_name: listId });
      expect(r.status).toBe(200);
      return eventually(`graph job of ${listId}`, async () => {
        const j = await s.call('GET', `/memory/jobs/${r.json.jobId}`, as(key));
        return j.json.status === 'completed' ? (j.json as Json) : undefined;
      });
    };
    const documentNodes = async (listId: string) =>
      (await s.db.withTenant(a.tenantId, (sql) => sql.query<{ doc_id: string }>(`SELECT properties->>'doc_id' AS doc_id FROM graph.kg_nodes WHERE tenant_id = $1 AND graph_id = $2 AND label = 'Document'`, [a.tenantId, listId]))).rows.map((r) => r.doc_id);
    // A page of the first workspace's own, through its key.
    const firstApi = admin(s, inFirst);
    const firstConnector = await firstApi.connector({ name: 'First workspace page', source: 'web', connector_specific_config: { base_url: web.page('/docs/page-3.html')!.url, web_connector_type: 'single' } });
    const firstPair = await firstApi.pair(firstConnector, await firstApi.credential('web'));
    const firstRun = await firstApi.runOnce(firstConnector);
    expect((await firstApi.ended(firstPair.id as number, firstRun.json.attempts[0].id as number)).status).toBe('success');
    const [firstDoc] = [...(await allIndexed(s, a.tenantId, firstPair.id as number, 1)).values()];
    const firstGraph = `first-${uniqueSuffix()}`;
    await graphJob(inFirst, firstGraph);
    expect(await documentNodes(firstGraph)).toContain(firstDoc!.doc_id);
    expect(await documentNodes(firstGraph)).not.toContain(doc!.doc_id);
    const wholeGraph = `whole-${uniqueSuffix()}`;
    await graphJob(a.key, wholeGraph);
    expect(await documentNodes(wholeGraph)).toContain(doc!.doc_id);
    const graphOnly = await s.key(a.tenantId, { scopes: { modules: ['graph'] } });
    for (const other of [inFirst, firstMemory, graphOnly]) {
      expect((await s.call('GET', `/memory/departments/${wholeGraph}`, as(other))).status).toBe(404);
      const listed = await s.call('GET', '/memory/departments', as(other));
      expect(listed.status).toBe(200);
      expect(JSON.stringify(listed.json)).not.toContain(wholeGraph);
      expect((await s.call('POST', '/memory/chat', as(other), { listId: wholeGraph, question: page.title })).status).toBe(404);
    }
    // The second workspace's key does not see it either (it holds the first's page too), nor the first's graph.
    expect((await s.call('GET', `/memory/departments/${wholeGraph}`, as(inSecond))).status).toBe(404);
    expect((await s.call('GET', `/memory/departments/${firstGraph}`, as(inSecond))).status).toBe(404);
    expect((await s.call('GET', `/memory/departments/${firstGraph}`, as(inFirst))).status).toBe(200);
    expect((await s.call('GET', `/memory/departments/${wholeGraph}`, as(a.key))).status).toBe(200);
    // A key denied the memory may not ingest documents into a graph at all.
    expect((await s.call('POST', '/memory/ingest/connectors', as(graphOnly), { list_id: `g-${uniqueSuffix()}`, source_types: null, mode: 'full', graph_name: 'x' })).status).toBe(403);

    // Chat: a key denied the memory (by its modules or its app permissions) is answered without searching it.
    const inSecondChat = await s.key(a.tenantId, { workspace_id: second.workspace_id, scopes: { modules: ['chat'] } });
    const inSecondApps = await s.key(a.tenantId, { workspace_id: second.workspace_id, app_permissions: { chat: true } });
    const ask = async (key: string, extra: Json = {}) => {
      const session = await s.call('POST', '/api/chat/create-chat-session', as(key), { persona_id: 0 });
      expect(session.status).toBe(200);
      return s.call('POST', '/api/chat/send-chat-message', as(key), { message: page.title, chat_session_id: session.json.chat_session_id, stream: false, ...extra });
    };
    const allowed = await ask(inSecond);
    expect(allowed.status).toBe(200);
    expect((allowed.json.top_documents as Json[]).map((d) => d.document_id)).toContain(doc!.doc_id);
    for (const denied of [inSecondChat, inSecondApps]) {
      const answer = await ask(denied);
      expect(answer.status).toBe(200);
      expect(answer.json.top_documents).toEqual([]);
      expect(answer.json.tool_calls).toEqual([]);
      expect(JSON.stringify(answer.json)).not.toContain(doc!.doc_id);
      // Asking for the search outright is refused, and says why.
      expect(await ask(denied, { forced_tool_id: 1 })).toMatchObject({ status: 403, json: { detail: expect.stringContaining('may not read the memory') } });
    }
  });

  it('records what a run it pauses had written: the pair\'s documents, its last status, the attempt\'s total', async () => {
    const api = admin(s, a.key);
    web.slow = { totalMs: 300, chunks: 2 };
    const connectorId = await api.connector({ name: 'Slow page', source: 'web', connector_specific_config: { base_url: web.special.slow, web_connector_type: 'single' } });
    const pair = await api.pair(connectorId, await api.credential('web'));
    const pairId = pair.id as number;
    const first = await api.runOnce(connectorId);
    expect((await api.ended(pairId, first.json.attempts[0].id as number)).status).toBe('success');
    await allIndexed(s, a.tenantId, pairId, 1);
    // The page now takes a minute: the next run is still reading it when the pair is paused.
    web.slow = { totalMs: 60_000, chunks: 60 };
    const second = await api.runOnce(connectorId, { from_beginning: true });
    const attemptId = second.json.attempts[0].id as number;
    await eventually('the run to be reading', async () => {
      const r = await s.call('GET', `/api/manage/admin/cc-pair/${pairId}/index-attempts`, as(a.key));
      return (r.json.index_attempts as Json[]).find((x) => x.id === attemptId)?.status === 'in_progress' ? true : undefined;
    });
    expect((await s.call('PUT', `/api/manage/admin/cc-pair/${pairId}/status`, as(a.key), { status: 'PAUSED' })).status).toBe(200);
    const info = await api.info(pairId);
    expect(info).toMatchObject({ status: 'PAUSED', num_docs_indexed: 1, last_index_attempt_status: 'canceled' });
    const attempts = (await s.call('GET', `/api/manage/admin/cc-pair/${pairId}/index-attempts`, as(a.key))).json.index_attempts as Json[];
    expect(attempts.find((x) => x.id === attemptId)).toMatchObject({ status: 'canceled', total_docs_indexed: 1 });
    web.slow = { totalMs: 300, chunks: 2 };
    await web.idle();
  });

  it('deletes a pair while its run writes: the deletion waits for the write, and no document of the pair stays in the memory', async () => {
    const api = admin(s, a.key);
    const config: WebSourceConfig = { base_url: `${web.siteUrl('alpha')}/`, web_connector_type: 'recursive' };
    const connectorId = await api.connector({ name: 'Deleted while writing', source: 'web', connector_specific_config: config });
    const credentialId = await api.credential('web');
    const pairId = (await api.pair(connectorId, credentialId)).id as number;
    gate.holding = true;
    try {
      expect((await api.runOnce(connectorId)).status).toBe(200);
      await eventually('a write of the run to be under way', async () => gate.held.length === 1);
      const del = await s.call('POST', '/api/manage/admin/deletion-attempt', as(a.key), { connector_id: connectorId, credential_id: credentialId });
      expect(del.status).toBe(200);
      // The deletion starts at once in the worker, beside the run it canceled, whose write is still under way.
      await sleep(2_000);
    } finally {
      gate.release();
    }
    await eventually('the pair to be gone', async () => (await s.call('GET', `/api/manage/admin/cc-pair/${pairId}`, as(a.key))).status === 404);
    await eventually('the canceled run to end', async () => s.core.indexer!.running() === 0);
    await sleep(500);
    // Before 2026-11-30 the deletion removed the pair first, then the canceled run's write landed: its documents
    // stayed in the memory for good, under a pair that no longer existed.
    expect((await memoryDocuments(s, a.tenantId, pairId)).size).toBe(0);
    const kept = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM core.connector_documents WHERE tenant_id = $1 AND cc_pair_id = $2`, [a.tenantId, pairId]));
    expect(kept.rows[0]!.n).toBe(0);
  });

  it('counts a run\'s documents batch by batch, and a resumed pair\'s run writes only after the paused run\'s write ended', async () => {
    const api = admin(s, a.key);
    const config: WebSourceConfig = { base_url: `${web.siteUrl('alpha')}/`, web_connector_type: 'recursive' };
    const truth = await sourceTruth(web, config);
    expect(truth.size).toBeGreaterThan(8);
    const connectorId = await api.connector({ name: 'Paused while writing', source: 'web', connector_specific_config: config });
    const pairId = (await api.pair(connectorId, await api.credential('web'))).id as number;
    // The first write goes through; the second is held.
    gate.holding = true;
    gate.passing = 1;
    gate.sizes = [];
    let second: number;
    try {
      const first = (await api.runOnce(connectorId)).json.attempts[0].id as number;
      await eventually('the second write to be under way', async () => gate.held.length === 1);
      // A fast site fills its batches (4 here); the source reads one more batch while a write is held, then waits.
      await sleep(300);
      expect(gate.sizes).toEqual([4, 4]);
      // The pair counts what the run wrote so far (before 2026-11-30: 0 until the run ended).
      expect(await api.info(pairId)).toMatchObject({ indexing: true, num_docs_indexed: 4 });

      expect((await s.call('PUT', `/api/manage/admin/cc-pair/${pairId}/status`, as(a.key), { status: 'PAUSED' })).status).toBe(200);
      expect((await s.call('PUT', `/api/manage/admin/cc-pair/${pairId}/status`, as(a.key), { status: 'ACTIVE' })).status).toBe(200);
      expect(await s.core.indexer!.tick()).toBe(1);
      second = (await api.info(pairId)).latest_index_attempts[0].id as number;
      expect(second).not.toBe(first);
      await eventually('the resumed run to be reading', async () => {
        const r = await s.call('GET', `/api/manage/admin/cc-pair/${pairId}/index-attempts`, as(a.key));
        return (r.json.index_attempts as Json[]).find((x) => x.id === second)?.status === 'in_progress' ? true : undefined;
      });
      // The new run waits for the paused run's write (before 2026-11-30 it wrote beside it).
      await sleep(1_500);
      expect(gate.held).toHaveLength(1);
    } finally {
      gate.release();
    }
    expect(await api.ended(pairId, second)).toMatchObject({ status: 'success' });
    await allIndexed(s, a.tenantId, pairId, truth.size);
    expect(await api.info(pairId)).toMatchObject({ num_docs_indexed: truth.size });
    // No write ever carried more than a batch.
    expect(Math.max(...gate.sizes)).toBeLessThanOrEqual(4);
    expect(Math.min(...gate.sizes)).toBeGreaterThanOrEqual(1);
  });

  it('writes the pages of a slow site within about a second of reading them, before its batch is full', async () => {
    const api = admin(s, a.key);
    const base = `${web.siteUrl('beta')}/linger`;
    const home = web.add(`${base}/index.html`, '<html><head><title>Linger home</title></head><body><p>Read <a href="quick.html">the quick page</a> and <a href="slow.html">the slow one</a>.</p></body></html>');
    web.add(`${base}/quick.html`, '<html><head><title>Quick page</title></head><body><p>The quick page answers at once and mentions quillwort.</p></body></html>');
    web.add(`${base}/slow.html`, '<html><head><title>Slow page</title></head><body><p>The slow page takes its time and mentions slowberry.</p></body></html>');
    web.delay(`${base}/slow.html`, 4_000);
    try {
      const connectorId = await api.connector({ name: 'Linger', source: 'web', connector_specific_config: { base_url: home.url, web_connector_type: 'recursive' } });
      const pairId = (await api.pair(connectorId, await api.credential('web'))).id as number;
      gate.sizes = [];
      const started = Date.now();
      const run = await api.runOnce(connectorId);
      // Two pages are read at once; the slow one is still on its way when the linger (1 s) writes the two others.
      await eventually('the first write', async () => (gate.sizes.length > 0 ? true : undefined));
      const firstWriteAfter = Date.now() - started;
      expect(gate.sizes).toEqual([2]);
      expect(firstWriteAfter).toBeLessThan(3_500);
      expect(web.requestsTo('beta', '/linger/slow.html').filter((r) => r.done)).toHaveLength(0);
      expect(await api.ended(pairId, run.json.attempts[0].id as number)).toMatchObject({ status: 'success', new_docs_indexed: 3 });
      expect(gate.sizes).toEqual([2, 1]);
    } finally {
      web.delay(`${base}/slow.html`, 0);
    }
  });

  it('writes a page whose title is longer than the memory takes, cut, with the rest of its batch', async () => {
    const api = admin(s, a.key);
    const title = 'Long title '.repeat(150);
    const home = web.add(`${web.siteUrl('beta')}/long/index.html`, '<html><head><title>Long home</title></head><body><p>See <a href="title.html">the long one</a>.</p></body></html>');
    web.add(`${web.siteUrl('beta')}/long/title.html`, `<html><head><title>${title}</title></head><body><p>The page with the longest title mentions zorbulant.</p></body></html>`);
    const connectorId = await api.connector({ name: 'Long title', source: 'web', connector_specific_config: { base_url: home.url, web_connector_type: 'recursive' } });
    const pairId = (await api.pair(connectorId, await api.credential('web'))).id as number;
    const run = await api.runOnce(connectorId);
    // Before 2026-11-30 the graph refused the whole batch: completed_with_errors, nothing written, on every run.
    expect(await api.ended(pairId, run.json.attempts[0].id as number)).toMatchObject({ status: 'success', new_docs_indexed: 2 });
    await allIndexed(s, a.tenantId, pairId, 2);
    const titles = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ title: string }>(`SELECT title FROM graph.documents WHERE tenant_id = $1 AND cc_pair_id = $2 ORDER BY title`, [a.tenantId, pairId]));
    // (The memory shows a title of its own length: the document is there, under its title's beginning.)
    expect(titles.rows.map((r) => r.title)).toEqual(['Long home', expect.stringMatching(/^Long title Long title /)]);
  });

  it('runs another tenant\'s connector at once while one tenant\'s slow crawls fill the worker', async () => {
    // Tenant B: six pairs over a page that takes a minute. The worker runs at most two of them (a quarter of its
    // eight runs); the rest wait in it without holding the topic's partitions.
    web.slow = { totalMs: 60_000, chunks: 60 };
    const slow = admin(s, b.key);
    const slowPairs: Array<{ connectorId: number; credentialId: number; pairId: number }> = [];
    for (let i = 0; i < 6; i++) {
      const connectorId = await slow.connector({ name: `Slow ${i}`, source: 'web', connector_specific_config: { base_url: web.special.slow, web_connector_type: 'single' } });
      const credentialId = await slow.credential('web');
      const pair = await slow.pair(connectorId, credentialId);
      expect((await slow.runOnce(connectorId)).status).toBe(200);
      slowPairs.push({ connectorId, credentialId, pairId: pair.id as number });
    }
    await eventually('two of B\'s runs to be reading', async () => {
      let reading = 0;
      for (const p of slowPairs) {
        const r = await s.call('GET', `/api/manage/admin/cc-pair/${p.pairId}/index-attempts`, as(b.key));
        if ((r.json.index_attempts as Json[])[0]?.status === 'in_progress') reading++;
      }
      return reading === 2 ? true : undefined;
    });
    try {
      // Tenant A's one-page connector (another site: a site gets two requests at a time) runs now, not after B's minute.
      const quick = admin(s, a.key);
      const page = web.pages('beta').find((p) => p.robotsAllowed && !p.noindex && p.canonical === null && p.contentType.startsWith('text/html'))!;
      const connectorId = await quick.connector({ name: 'Quick page', source: 'web', connector_specific_config: { base_url: page.url, web_connector_type: 'single' } });
      const pair = await quick.pair(connectorId, await quick.credential('web'));
      const started = Date.now();
      const run = await quick.runOnce(connectorId);
      expect((await quick.ended(pair.id as number, run.json.attempts[0].id as number)).status).toBe('success');
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      for (const p of slowPairs) {
        expect((await s.call('POST', '/api/manage/admin/deletion-attempt', as(b.key), { connector_id: p.connectorId, credential_id: p.credentialId })).status).toBe(200);
      }
      for (const p of slowPairs) await eventually(`B's pair ${p.pairId} to be gone`, async () => (await s.call('GET', `/api/manage/admin/cc-pair/${p.pairId}`, as(b.key))).status === 404);
      web.slow = { totalMs: 300, chunks: 2 };
      await web.idle();
    }
  });

  it('fails a run into a memory that was erased, with the reason, and pauses the pair instead of crawling for nothing', async () => {
    const created = await s.call('POST', '/api/v1/workspaces', { 'x-api-key': a.key }, { name: `Doomed ${uniqueSuffix()}` });
    expect(created.status).toBe(201);
    const doomed = created.json as { workspace_id: string; primary_memory_id: string };
    const api = admin(s, await s.key(a.tenantId, { workspace_id: doomed.workspace_id }));
    const connectorId = await api.connector({ name: 'Doomed page', source: 'web', connector_specific_config: { base_url: web.page('/docs/page-5.html')!.url, web_connector_type: 'single' } });
    const pair = await api.pair(connectorId, await api.credential('web'));
    const pairId = pair.id as number;
    const first = await api.runOnce(connectorId);
    expect((await api.ended(pairId, first.json.attempts[0].id as number)).status).toBe('success');
    await allIndexed(s, a.tenantId, pairId, 1);

    expect((await adminCall(s.gateway, 'DELETE', `/internal/v1/tenants/${a.tenantId}/memories/${doomed.primary_memory_id}?retain_data=false`)).status).toBe(204);
    await eventually('the memory to be erased', async () => {
      const r = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ erased_at: Date | null }>(`SELECT erased_at FROM graph.memories WHERE tenant_id = $1 AND memory_id = $2`, [a.tenantId, doomed.primary_memory_id]));
      return r.rows[0]?.erased_at ? true : undefined;
    });
    const tenantWide = admin(s, a.key);
    const again = await tenantWide.runOnce(connectorId, { from_beginning: true });
    expect(again.status).toBe(200);
    const ended = await tenantWide.ended(pairId, again.json.attempts[0].id as number);
    expect(ended).toMatchObject({ status: 'failed', error_msg: expect.stringContaining('no longer exists') });
    const info = await tenantWide.info(pairId);
    expect(info).toMatchObject({ status: 'PAUSED', last_index_attempt_status: 'failed' });
    // Paused, the schedule leaves it alone; deleting it still works.
    expect(await s.core.indexer!.tick()).toBe(0);
    expect((await s.call('POST', '/api/manage/admin/deletion-attempt', as(a.key), { connector_id: connectorId, credential_id: pair.credential.id })).status).toBe(200);
    await eventually('the pair to be gone', async () => (await s.call('GET', `/api/manage/admin/cc-pair/${pairId}`, as(a.key))).status === 404);
  });

  it('deletes a pair with its documents, and refuses runs it cannot make', async () => {
    const api = admin(s, a.key);
    const config: WebSourceConfig = { base_url: web.page('/docs/page-1.html')!.url, web_connector_type: 'single' };
    const connectorId = await api.connector({ name: 'One page', source: 'web', connector_specific_config: config });
    const credentialId = await api.credential('web');
    const pair = await api.pair(connectorId, credentialId);
    const run = await api.runOnce(connectorId, { credential_ids: [credentialId], from_beginning: true });
    expect(run.json.attempts[0]).toMatchObject({ kind: 'load' });
    await api.ended(pair.id as number, run.json.attempts[0].id as number);
    const [only] = [...(await allIndexed(s, a.tenantId, pair.id as number, 1)).values()];
    expect((await retrieve(s, a.key, web.page('/docs/page-1.html')!.title)).map((c) => c.document_id)).toContain(only!.doc_id);

    // Bad runs: unknown connector, a credential it does not have, a paused pair; nothing is started.
    expect(await api.runOnce(999_999)).toMatchObject({ status: 404, json: { detail: 'connector not found' } });
    expect((await api.runOnce(connectorId, { credential_ids: [999_999] })).status).toBe(404);
    expect((await api.runOnce(connectorId, { credential_ids: 'all' })).status).toBe(422);
    expect((await s.call('PUT', `/api/manage/admin/cc-pair/${pair.id}/status`, as(a.key), { status: 'PAUSED' })).status).toBe(200);
    expect(await api.runOnce(connectorId)).toMatchObject({ status: 400, json: { detail: expect.stringContaining('paused') } });
    expect(await s.core.indexer!.tick()).toBe(0);
    expect((await s.call('PUT', `/api/manage/admin/cc-pair/${pair.id}/status`, as(a.key), { status: 'ACTIVE' })).status).toBe(200);

    // Another tenant cannot delete it.
    expect((await s.call('POST', '/api/manage/admin/deletion-attempt', as(b.key), { connector_id: connectorId, credential_id: credentialId })).status).toBe(404);
    const del = await s.call('POST', '/api/manage/admin/deletion-attempt', as(a.key), { connector_id: connectorId, credential_id: credentialId });
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ cc_pair_id: pair.id, status: 'DELETING', attempt_id: expect.any(Number) });
    await eventually('the pair to be gone', async () => (await s.call('GET', `/api/manage/admin/cc-pair/${pair.id}`, as(a.key))).status === 404);
    expect((await memoryDocuments(s, a.tenantId, pair.id as number)).size).toBe(0);
    expect((await retrieve(s, a.key, web.page('/docs/page-1.html')!.title)).map((c) => c.document_id)).not.toContain(only!.doc_id);
    // The connector went with its last pair; the credential stays.
    expect((await api.runOnce(connectorId)).status).toBe(404);
    expect((await s.call('GET', `/api/manage/credential/${credentialId}`, as(a.key))).status).toBe(200);
  });

  it('refuses a site that cannot be resolved, and fails a run whose site stopped answering, without an address', async () => {
    const api = admin(s, a.key);
    const unresolvable = await s.call('POST', '/api/manage/admin/connector', as(a.key), {
      name: 'Nowhere', source: 'web', input_type: 'load_state', connector_specific_config: { base_url: 'http://nowhere.invalid/', web_connector_type: 'single' }, access_type: 'public',
    });
    expect(unresolvable.status).toBe(400);
    expect(unresolvable.json.detail).toBe('base_url cannot be read by a connector: nowhere.invalid does not resolve to an address Lore may reach');

    // A port where nothing listens any more.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const config: WebSourceConfig = { base_url: `http://127.0.0.1:${port}/`, web_connector_type: 'single' };
    const connectorId = await api.connector({ name: 'Gone quiet', source: 'web', connector_specific_config: config });
    const pair = await api.pair(connectorId, await api.credential('web'));
    const run = await api.runOnce(connectorId);
    const ended = await api.ended(pair.id as number, run.json.attempts[0].id as number);
    expect(ended.status).toBe('failed');
    expect(ended.error_msg).toEqual(expect.any(String));
    expect(ended.error_msg).not.toContain('127.0.0.1');
    expect(ended.error_msg).not.toContain(String(port));
    expect((await api.info(pair.id as number)).last_index_attempt_status).toBe('failed');
  });

  it('never starts one pair twice when two schedulers pass at once', async () => {
    const api = admin(s, b.key);
    const pairs: number[] = [];
    for (let i = 0; i < 4; i++) {
      const connectorId = await api.connector({ name: `Race ${i}`, source: 'web', connector_specific_config: { base_url: web.page('/docs/page-1.html')!.url, web_connector_type: 'single' } });
      pairs.push((await api.pair(connectorId, await api.credential('web'))).id as number);
    }
    // A second replica's scheduler: the same pass over the same database.
    const replica = {
      db: s.db,
      logger: createLogger({ level: 'silent', service: 'replica' }),
      signer: new IdentitySigner(IDENTITY_SECRET),
      secrets: s.core.core.secrets,
      documents: new GraphConnectorDocuments({ url: 'http://127.0.0.1:9', timeoutMs: 1_000 }),
      sources: () => {
        throw new Error('a scheduler pass reads no source');
      },
      settings: DEFAULT_INDEXING_SETTINGS,
      blobs: null,
    };
    const started = await Promise.all([s.core.indexer!.tick(), scheduleTick(replica), scheduleTick(replica)]);
    expect(started.reduce((x, y) => x + y, 0)).toBe(4);
    for (const id of pairs) expect((await api.info(id)).number_of_index_attempts).toBe(1);
  });
});

/** Forwards to the graph service, holding each connector-document write for `delayMs` (a slow memory). */
async function slowProxy(target: string, delayMs: number): Promise<{ url: string; close: () => Promise<void> }> {
  const t = new URL(target);
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const forward = () => {
        const out = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        });
        out.on('error', () => res.destroy());
        out.end(Buffer.concat(chunks));
      };
      if (req.url?.startsWith('/internal/v1/connector-documents')) setTimeout(forward, delayMs);
      else forward();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

describe('core: a worker killed mid-attempt', () => {
  let s: CoreStack;
  let proxy: { url: string; close: () => Promise<void> };
  let proxyTarget = '';
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    // The stack's own indexer stays stopped while the killed worker runs: one worker at a time, as in a cluster.
    s = await startCoreStack({
      indexer: { settings: { heartbeatMs: 200, staleMs: 2_000, batchDocuments: 1 } },
      graphUrl: (url) => {
        proxyTarget = url;
        return url;
      },
    });
    await s.core.indexer!.stop();
    proxy = await slowProxy(proxyTarget, 400);
  }, 120_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await s?.close();
    await proxy?.close();
    closeIdleHttpConnections();
  });

  it('loses and duplicates nothing: the silent attempt fails, the pair runs again, every file is indexed once', async () => {
    const a = await s.tenant();
    const api = admin(s, a.key);
    const blobs = new PostgresBlobStore(s.db);
    const files: string[] = [];
    for (let i = 0; i < 12; i++) {
      const key = `connector-files/${uniqueSuffix()}/note-${i}.md`;
      await blobs.put(a.tenantId, key, Buffer.from(`# Field note ${i}\n\nThe survey of cairn ${i} found marker stone number ${1000 + i}.`), 'text/markdown');
      files.push(key);
    }
    const connectorId = await api.connector({ name: 'Field notes', source: 'file', connector_specific_config: { file_locations: files } });
    const pair = await api.pair(connectorId, await api.credential('file'));
    const run = await api.runOnce(connectorId);
    const attemptId = run.json.attempts[0].id as number;

    const logs: string[] = [];
    const child = spawn(process.execPath, ['--conditions=lore-src', '--import', 'tsx', join(ROOT, 'services/core/src/worker-main.ts')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        LORE_LOG_LEVEL: 'info',
        LORE_DATABASE_URL: s.database.url,
        LORE_IDENTITY_SECRET: IDENTITY_SECRET,
        LORE_ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
        LORE_CORE_GRAPH_URL: proxy.url,
        LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
        LORE_KAFKA_PREFIX: s.kafkaPrefix,
        LORE_CORE_CONSUMER_GROUP: `core-worker-killed-${uniqueSuffix()}`,
        LORE_CORE_WORKER_PORT: '0',
        LORE_CORE_HOST: '127.0.0.1',
        LORE_CORE_RELAY: 'false',
        LORE_CORE_SCHEDULER_INTERVAL_MS: '3600000',
        LORE_CORE_INDEX_BATCH_DOCUMENTS: '1',
        LORE_CORE_INDEX_HEARTBEAT_MS: '200',
        LORE_CORE_INDEX_STALE_MS: '2000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    child.stdout?.on('data', (d: Buffer) => logs.push(d.toString()));
    child.stderr?.on('data', (d: Buffer) => logs.push(d.toString()));

    // Killed once a few files are written, well before the last.
    const kept = async () => Number((await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM core.connector_documents WHERE cc_pair_id = $1`, [pair.id]))).rows[0]!.n);
    await eventually('the worker to write some files', async () => (child.exitCode === null ? (await kept()) >= 3 : Promise.reject(new Error(`worker exited: ${logs.join('')}`))), 90_000);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    expect(await kept()).toBeLessThan(files.length);
    const info = await api.info(pair.id as number);
    expect(info.latest_index_attempts[0]).toMatchObject({ id: attemptId, status: 'in_progress' });

    // Another worker (the stack's): its scheduler finds the silent attempt, fails it, and runs the pair again.
    await s.core.indexer!.start();
    await sleep(2_500);
    expect(await s.core.indexer!.tick()).toBe(1);
    const failed = await api.ended(pair.id as number, attemptId);
    // It says what the killed run had written for the pair (a number, not null).
    expect(failed).toMatchObject({ status: 'failed', error_msg: 'the worker running it stopped answering', total_docs_indexed: expect.any(Number) });
    const retry = (await api.info(pair.id as number)).latest_index_attempts[0] as Json;
    expect(retry.id).not.toBe(attemptId);
    expect(await api.ended(pair.id as number, retry.id as number)).toMatchObject({ status: 'success', total_docs_indexed: files.length });

    const docs = await allIndexed(s, a.tenantId, pair.id as number, files.length);
    expect(new Set(docs.keys())).toEqual(new Set(files));
    const perKey = await s.db.withTenant(a.tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM graph.documents WHERE cc_pair_id = $1 GROUP BY external_id`, [pair.id]));
    expect(perKey.rows.every((r) => r.n === 1)).toBe(true);
    expect(await retrieve(s, a.key, 'marker stone 1007')).toContainEqual(expect.objectContaining({ source_type: 'file' }));
    expect((await api.info(pair.id as number)).num_docs_indexed).toBe(files.length);
  });
});
