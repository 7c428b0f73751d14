/**
 * Chat benchmark: a complete chat answer (`send-chat-message`, `stream: false`) against the memory search of the
 * same question on the same corpus, both through the gateway in the same run, interleaved question by question.
 * Prints p50/p95 of each, the ratio of the p95s (target <= 1.3x), and the p95 of the first streamed part and of
 * the first answer text of a streamed chat answer.
 *
 * The corpus is the memory benchmarks' knowledge base (bench/memory/data/lore-kb: 45 documents and the 30
 * questions asked) plus `--extra N` generated notes (default 2,000) so retrieval works on a corpus of a realistic
 * size; `--extra 0` measures the small base alone, where chat's fixed work (two short transactions, one more hop)
 * weighs most against a search of a few milliseconds.
 *
 *   bash test/infra/up.sh && npm run bench:chat [-- --rounds 3 --extra 2000]
 *
 * The stack is the integration suites' (test/core/harness.ts): gateway, core and graph in this process on the
 * real PostgreSQL, Redis and Kafka, with the embedded extractive model, so the figure is Lore's own work. Once every
 * document is indexed, the graph's tables are analyzed (as autovacuum would have done on a running install) before
 * anything is timed.
 *
 * `--hops` also prints where each timed request spent its time, from the servers' own view (Node's
 * `http.server.request.start` and `http.server.response.finish` diagnostics channels; the stack runs in this
 * process): the client's round trip, the gateway's span, its upstream's (core for a chat, graph for a search), and
 * for a chat the graph's retrieval inside core's span, split into before it, the retrieval, and after it.
 */
import { subscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCoreStack } from '../../test/core/harness';
import { requireEnv } from '../../test/support/infra';
import { closeIdleHttpConnections } from '../../test/support/http';

const argNum = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROUNDS = argNum('rounds', 3);
const HOPS = process.argv.includes('--hops');
const EXTRA = argNum('extra', 2000);
const TARGET = 1.3;
const DATA = join(__dirname, '..', 'memory', 'data', 'lore-kb');

const jsonl = <T>(file: string): T[] => readFileSync(join(DATA, file), 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as T);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** A generated note: the same shape for every i, different facts, none answering the knowledge base's questions. */
function note(i: number): { title: string; text: string } {
  const topics = ['billing', 'deployment', 'onboarding', 'incident', 'pricing', 'security', 'travel', 'payroll', 'hiring', 'facilities'];
  const cities = ['Lisbon', 'Rotterdam', 'Tallinn', 'Porto', 'Ghent', 'Bergen', 'Lyon', 'Turin'];
  const t = topics[i % topics.length]!;
  const c = cities[(i * 7) % cities.length]!;
  return {
    title: `Note ${i} on ${t}`,
    text: [
      `This note records decision ${i} on ${t}. The owner reviewed the ${t} process with the team in ${c} on day ${i % 28}.`,
      `Action items: update the ${t} runbook, inform the ${c} office, and schedule a follow-up in ${(i % 6) + 1} weeks.`,
      `Context: the previous ${t} change caused ${i % 5} support tickets and a short delay for customers near ${c}.`,
    ].join(' '),
  };
}

const now = () => Number(process.hrtime.bigint()) / 1e6;

/** A request one of the stack's servers handled: its port, path, and when it arrived and was answered. */
interface Span { port: number; path: string; start: number; end: number }
const spans: Span[] = [];
function recordSpans(): void {
  const open = new WeakMap<ServerResponse, Span>();
  subscribe('http.server.request.start', (m) => {
    const { request: req, response, server } = m as { request: IncomingMessage; response: ServerResponse; server: Server };
    const address = server.address();
    const span = { port: typeof address === 'object' && address ? address.port : 0, path: (req.url ?? '').split('?')[0]!, start: now(), end: NaN };
    open.set(response, span);
    spans.push(span);
  });
  subscribe('http.server.response.finish', (m) => {
    const span = open.get((m as { response: ServerResponse }).response);
    if (span) span.end = now();
  });
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T; spans: Span[] }> {
  const from = spans.length;
  const started = now();
  const value = await fn();
  return { ms: now() - started, value, spans: spans.slice(from) };
}

const portOf = (url: string) => Number(new URL(url).port);

async function main(): Promise<void> {
  requireEnv('LORE_TEST_PG_URL');
  if (HOPS) recordSpans();
  const s = await startCoreStack({ checkResponses: false });
  try {
    const t = await s.tenant();
    const key = { 'x-api-key': t.key };
    const bearer = { authorization: `Bearer ${t.key}` };
    const base = jsonl<{ _id: string; title: string; text: string }>('corpus.jsonl');
    const corpus = [...base, ...Array.from({ length: EXTRA }, (_, i) => ({ _id: `n${i}`, ...note(i) }))];
    const queries = jsonl<{ _id: string; text: string }>('queries.jsonl');
    for (const d of corpus) {
      const r = await s.call('POST', '/api/v1/memory/ingest', key, { content: `${d.title}\n\n${d.text}`, content_type: 'text', title: d.title, routing: { mode: 'auto' } });
      if (r.status !== 200) throw new Error(`ingest failed: ${r.status} ${r.text}`);
    }
    // Indexing runs in the graph worker: wait until every document is indexed (a title search is no proof: a
    // generated note can outrank a short base document), up to five minutes.
    for (let i = 0; ; i++) {
      const r = await s.db.withTenant(t.tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM graph.documents WHERE tenant_id = $1 AND status = 'indexed'`, [t.tenantId]));
      if (r.rows[0]!.n >= corpus.length) break;
      if (i > 3000) throw new Error(`${corpus.length - r.rows[0]!.n} of ${corpus.length} documents were not indexed`);
      await new Promise((res) => setTimeout(res, 100));
    }
    // The tables' statistics as a running install has them (autovacuum analyzes a table within about a minute of a
    // bulk write). Without them, in a fresh database's first minute, the planner takes the memory for nearly empty
    // and ranks every chunk by exact distance instead of using the HNSW index: a search then takes about twice as
    // long, and which of the two a run got depended on whether autovacuum had come by (docs/core.md).
    for (const table of ['chunks', 'documents', 'postings', 'term_stats', 'corpus_stats']) await s.db.asOwner((sql) => sql.query(`VACUUM (ANALYZE) graph.${table}`));
    const session = async () => (await s.call('POST', '/api/chat/create-chat-session', bearer, { persona_id: 0 })).json.chat_session_id as string;
    const search = (q: string) => s.call('POST', '/api/v1/memory/search', key, { query: q });
    const chat = async (q: string, id: string) => s.call('POST', '/api/chat/send-chat-message', bearer, { message: q, chat_session_id: id, stream: false });
    /** Times to the first streamed part and to the first answer text. */
    const streamed = async (q: string, id: string) => {
      const started = process.hrtime.bigint();
      const res = await fetch(`${s.gateway.publicUrl}/api/chat/send-chat-message`, { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ message: q, chat_session_id: id }) });
      let first = NaN;
      let firstText = NaN;
      let buffer = '';
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const now = Number(process.hrtime.bigint() - started) / 1e6;
        buffer += decoder.decode(chunk, { stream: true });
        if (Number.isNaN(first) && buffer.includes('\n')) first = now;
        if (Number.isNaN(firstText) && buffer.includes('"answer_delta"')) firstText = now;
      }
      return { first, firstText };
    };

    // Warm-up: every path once per question.
    for (const q of queries.slice(0, 5)) {
      await search(q.text);
      await chat(q.text, await session());
      await streamed(q.text, await session());
    }
    const searchMs: number[] = [];
    const chatMs: number[] = [];
    const firstMs: number[] = [];
    const firstTextMs: number[] = [];
    let cited = 0;
    const hops: Record<string, number[]> = {};
    const hop = (name: string, ms: number) => (hops[name] ??= []).push(ms);
    const gatewayPort = portOf(s.gateway.publicUrl);
    const corePort = portOf(s.coreServer.url);
    for (let round = 0; round < ROUNDS; round++) {
      for (const q of queries) {
        const ids = [await session(), await session()];
        const a = await timed(() => search(q.text));
        const b = await timed(() => chat(q.text, ids[0]!));
        if (a.value.status !== 200 || b.value.status !== 200) throw new Error(`search ${a.value.status}, chat ${b.value.status}: ${b.value.text}`);
        if (b.value.json.citation_info.length > 0) cited++;
        searchMs.push(a.ms);
        chatMs.push(b.ms);
        if (HOPS) {
          const gw = (t: { spans: Span[] }) => t.spans.find((x) => x.port === gatewayPort)!;
          const searchUp = a.spans.find((x) => x.port !== gatewayPort && x.path === '/api/v1/memory/search')!;
          hop('search: client round trip', a.ms);
          hop('search: gateway span', gw(a).end - gw(a).start);
          hop('search: graph span', searchUp.end - searchUp.start);
          const coreSpan = b.spans.find((x) => x.port === corePort)!;
          const retrieve = b.spans.filter((x) => x.path === '/api/v1/memory/retrieve');
          hop('chat: client round trip', b.ms);
          hop('chat: gateway span', gw(b).end - gw(b).start);
          hop('chat: core span', coreSpan.end - coreSpan.start);
          if (retrieve.length === 1) {
            hop('chat: core, until the retrieval arrives in graph', retrieve[0]!.start - coreSpan.start);
            hop('chat: graph span of the retrieval', retrieve[0]!.end - retrieve[0]!.start);
            hop('chat: core, after the retrieval', coreSpan.end - retrieve[0]!.end);
          }
        }
        const st = await streamed(q.text, ids[1]!);
        firstMs.push(st.first);
        firstTextMs.push(st.firstText);
      }
    }
    const ratio = percentile(chatMs, 95) / percentile(searchMs, 95);
    const f = (n: number) => n.toFixed(1);
    const lines = [
      `chat benchmark (${corpus.length} documents: ${base.length} of the knowledge base and ${EXTRA} generated notes; ${queries.length} questions x ${ROUNDS} rounds; embedded model; through the gateway)`,
      `memory search         p50 ${f(percentile(searchMs, 50))} ms   p95 ${f(percentile(searchMs, 95))} ms`,
      `chat, complete        p50 ${f(percentile(chatMs, 50))} ms   p95 ${f(percentile(chatMs, 95))} ms   (${cited} of ${chatMs.length} answers cited)`,
      `ratio of the p95s     ${ratio.toFixed(2)}x   (target <= ${TARGET}x)`,
      `chat, streamed        first part p50 ${f(percentile(firstMs, 50))} ms  p95 ${f(percentile(firstMs, 95))} ms;  first answer text p50 ${f(percentile(firstTextMs, 50))} ms  p95 ${f(percentile(firstTextMs, 95))} ms`,
      `verdict               ${ratio <= TARGET ? 'target met' : 'target missed'}`,
    ];
    if (HOPS) {
      lines.push('where the time went (p50 / p95, ms; each figure on its own, so they do not add up exactly):');
      for (const [name, values] of Object.entries(hops)) lines.push(`  ${name.padEnd(50)} ${f(percentile(values, 50))} / ${f(percentile(values, 95))}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await s.close();
    closeIdleHttpConnections();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
