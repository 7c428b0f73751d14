/**
 * Web connector benchmark (issue 12): indexing a loopback site with a `web` connector against a plain fetch loop
 * over the same pages, in the same run, round by round; target: indexing throughput ≥ 0.5× the loop's. Then an
 * incremental run (a poll) of the unchanged site, which must re-embed 0 chunks.
 *
 *   bash test/infra/up.sh && npm run bench:connectors [-- --pages 500 --rounds 3 --mode recursive|sitemap]
 *
 * The site is the loopback web's alpha with its generated documentation section (`generatedPages`, see
 * test/support/loopback-web.ts): `--pages` pages under /generated/ plus their section pages and index, several
 * paragraphs each; the connector reads `/generated/` recursively (or `/generated/sitemap.xml`). Crawl-delay 0 and
 * the web source's `minDelayMs: 0`, as the integration suites run it; everything else (batches of 16 documents, two
 * requests at a time per site) is the indexer's default. The stack is the integration suites'
 * (test/core/harness.ts): gateway, core with its indexer and graph in this process, on the real PostgreSQL, Redis
 * and Kafka, the graph's default hashed embedder.
 *
 * Each round, interleaved:
 * - fetch loop: GET every page the connector indexes (the documents of the warm-up run, checked against the world),
 *   two at a time over kept-alive connections — the web source's own limit per site, so like is compared with
 *   like — with plain node:http, reading each body whole. Plain node:http is the judged baseline because the issue
 *   says "a plain fetch loop": everything Lore adds, its SSRF-guarded client included, counts against it. The same
 *   loop through the guarded outbound client the source uses (guard, robots.txt, limits; its pool kept as the
 *   indexer keeps its own) is printed beside it, to show how much of the gap is the client.
 * - the web source alone: the same crawl (`WebSource.loadAll` with the same fetcher and configuration) read to its
 *   end in this process with nothing written — links, robots directives, canonical links, text and content hashes
 *   included. Printed beside the loops, not judged: it is the ceiling of the indexing figure, which adds the writes.
 * - indexing: a fresh tenant, connector, credential and pair; `run-once` (a load) through the gateway, timed to
 *   the moment `GET …/index-attempts` shows the attempt ended: every document accepted into the memory through the
 *   graph's pipeline (DLP, routing, the worker's message), which is what the target is judged on. Chunking and
 *   embedding follow in the graph worker; "all chunks indexed" (every document of the pair `indexed`) is timed from
 *   the same start and printed separately.
 * - incremental: `run-once` again on the unchanged site (a poll with the validators kept): its duration, the
 *   requests that answered 304, the documents it wrote, and the chunks written to graph.chunks from its start until
 *   the graph worker is idle (max(chunk_id) before, rows past it after) — must be 0.
 *
 * - the graph's write: every request to the graph's `POST /internal/v1/connector-documents` is timed in the graph's
 *   own server (Node's `http.server.request.start` / `http.server.response.finish` diagnostics channels: from the
 *   request's headers read to its answer written), and their sum over a load's documents is the write time per
 *   document, the figure docs/core.md follows.
 *
 * The stack has Kafka topics of its own (test/core/harness.ts), so its graph worker replays no earlier run's ingest
 * messages beside the measured rounds. `--delay-ms N` spaces request starts
 * by N ms on both sides (the web source's default `minDelayMs` is 100): context, not the judged setting.
 *
 * Prints medians, per-round figures, and a verdict; exits 1 when a target is missed.
 */
import { subscribe } from 'node:diagnostics_channel';
import { Agent, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { startCoreStack, type CoreStack } from '../../test/core/harness';
import { requireEnv, uniqueSuffix } from '../../test/support/infra';
import { closeIdleHttpConnections } from '../../test/support/http';
import { LoopbackWeb } from '../../test/support/loopback-web';
import { median } from '../support/stats';
import { consume, createWebFetcher, WEB_USER_AGENT, WebSource, type WebFetcher, type WebSourceConfig } from '../../services/core/src/connectors';

const argNum = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const argStr = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? String(process.argv[i + 1]) : fallback;
};
const PAGES = argNum('pages', 500);
const ROUNDS = argNum('rounds', 3);
const MODE = argStr('mode', 'recursive') as 'recursive' | 'sitemap';
/** Spacing of request starts, for the source (`minDelayMs`) and both loops alike. Default 0, as the suites run. */
const DELAY_MS = argNum('delay-ms', 0);
/** Documents per write to the memory (`LORE_CORE_INDEX_BATCH_DOCUMENTS`); default: the indexer's own. */
const BATCH = argNum('batch', 0);
/** The web source's requests in flight per site (WebSource: at most 2). */
const CONCURRENCY = 2;
const TARGET = 0.5;
/** How often the attempt and the documents are looked at: the timings' resolution. */
const POLL_MS = 50;
const ACCEPT_PAGE = 'text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1';

type Json = Record<string, any>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

/** Runs `work` over `items`, `limit` at a time, starts spaced by DELAY_MS as the web source spaces them. */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let nextStart = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      const at = Math.max(now(), nextStart);
      nextStart = at + DELAY_MS;
      if (at > now()) await sleep(at - now());
      await work(item);
    }
  }));
}

/** The judged baseline: plain node:http, kept-alive connections, two at a time, every body read whole. */
async function plainLoop(web: LoopbackWeb, agent: Agent, urls: string[]): Promise<{ ms: number; bytes: number }> {
  let bytes = 0;
  const get = (url: string) =>
    new Promise<void>((resolve, reject) => {
      const u = new URL(url);
      // The world's names resolve only through its own resolver: connect to it, name the site in Host.
      const req = request({ host: '127.0.0.1', port: web.port, path: u.pathname + u.search, agent, headers: { host: u.host, 'user-agent': WEB_USER_AGENT, accept: ACCEPT_PAGE } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`${url} answered ${res.statusCode}`));
          bytes += Buffer.concat(chunks).length;
          resolve();
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
  const started = now();
  await pool(urls, CONCURRENCY, get);
  return { ms: now() - started, bytes };
}

/** The same loop through the web source's SSRF-guarded outbound client (guard, robots.txt, limits). */
async function guardedLoop(fetcher: WebFetcher, urls: string[]): Promise<number> {
  const started = now();
  await pool(urls, CONCURRENCY, async (url) => {
    const r = await fetcher.client.fetch({ url, headers: { accept: ACCEPT_PAGE }, robots: fetcher.robots, maxResponseBytes: 10 * 1024 * 1024, oversize: 'truncate', timeoutMs: 30_000 });
    if (r.status !== 200) throw new Error(`${url} answered ${r.status}`);
  });
  return now() - started;
}

/**
 * The web source alone, read to its end with nothing written: the same crawl the indexer runs (fetch, robots.txt,
 * links, canonical, text, content hash), as fast as this process reads it. The ceiling of the indexing figure.
 */
async function sourceAlone(fetcher: WebFetcher, config: WebSourceConfig): Promise<{ ms: number; docs: number }> {
  const source = new WebSource(config, fetcher, { minDelayMs: DELAY_MS });
  const started = now();
  let docs = 0;
  const outcome = await consume(source.loadAll({ signal: new AbortController().signal }), (item) => {
    if (item.kind === 'document') docs += 1;
  });
  if (outcome.stop !== 'completed') throw new Error(`the source alone stopped: ${outcome.stop}`);
  return { ms: now() - started, docs };
}

/** Admin calls of one tenant through the gateway. */
function admin(s: CoreStack, key: string) {
  const as = { authorization: `Bearer ${key}` };
  const ok = (r: { status: number; text: string }, want: number, what: string) => {
    if (r.status !== want) throw new Error(`${what}: ${r.status} ${r.text}`);
  };
  return {
    async pair(config: Json): Promise<{ connectorId: number; pairId: number }> {
      const c = await s.call('POST', '/api/manage/admin/connector', as, { name: `Bench ${uniqueSuffix()}`, source: 'web', input_type: 'load_state', connector_specific_config: config, refresh_freq: 86_400, prune_freq: null, indexing_start: null, access_type: 'public', groups: [] });
      ok(c, 200, 'connector');
      const cred = await s.call('POST', '/api/manage/credential', as, { name: `web ${uniqueSuffix()}`, source: 'web', credential_json: {} });
      ok(cred, 201, 'credential');
      const p = await s.call('PUT', `/api/manage/connector/${c.json.id}/credential/${cred.json.id}`, as, {});
      ok(p, 200, 'pair');
      return { connectorId: c.json.id as number, pairId: p.json.id as number };
    },
    async runOnce(connectorId: number): Promise<number> {
      const r = await s.call('POST', '/api/manage/admin/connector/run-once', as, { connector_id: connectorId });
      ok(r, 200, 'run-once');
      return r.json.attempts[0].id as number;
    },
    /** Polls the pair's attempts until `attemptId` ended; answers it. */
    async ended(pairId: number, attemptId: number, timeoutMs = 600_000): Promise<Json> {
      const deadline = now() + timeoutMs;
      for (;;) {
        const r = await s.call('GET', `/api/manage/admin/cc-pair/${pairId}/index-attempts`, as);
        ok(r, 200, 'index-attempts');
        const a = (r.json.index_attempts as Json[]).find((x) => x.id === attemptId);
        if (a && !['not_started', 'in_progress'].includes(a.status as string)) return a;
        if (now() > deadline) throw new Error(`attempt ${attemptId} did not end`);
        await sleep(POLL_MS);
      }
    },
  };
}

/** How many of the pair's documents the graph holds, and how many are indexed or failed (a light look, polled). */
async function pairCounts(s: CoreStack, tenantId: string, pairId: number): Promise<{ total: number; indexed: number; failed: number }> {
  return s.db.withTenant(tenantId, async (sql) => {
    const r = await sql.query<{ total: number; indexed: number; failed: number }>(
      `SELECT count(*)::int AS total, (count(*) FILTER (WHERE status = 'indexed'))::int AS indexed, (count(*) FILTER (WHERE status = 'failed'))::int AS failed
         FROM graph.documents WHERE tenant_id = $1 AND cc_pair_id = $2`,
      [tenantId, pairId],
    );
    return r.rows[0]!;
  });
}

/** The pair's documents (their source ids) and their chunks. */
async function pairDocuments(s: CoreStack, tenantId: string, pairId: number): Promise<{ ids: string[]; chunks: number }> {
  return s.db.withTenant(tenantId, async (sql) => {
    const r = await sql.query<{ external_id: string; chunks: number }>(
      `SELECT d.external_id, (SELECT count(*)::int FROM graph.chunks c WHERE c.tenant_id = d.tenant_id AND c.doc_id = d.doc_id) AS chunks
         FROM graph.documents d WHERE d.tenant_id = $1 AND d.cc_pair_id = $2`,
      [tenantId, pairId],
    );
    return { ids: r.rows.map((x) => x.external_id), chunks: r.rows.reduce((n, x) => n + x.chunks, 0) };
  });
}

/** Waits until every document of the pair is indexed or failed (no longer queued); answers the counts then. */
async function allIndexed(s: CoreStack, tenantId: string, pairId: number, count: number, timeoutMs = 600_000): Promise<Awaited<ReturnType<typeof pairCounts>>> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const st = await pairCounts(s, tenantId, pairId);
    if (st.total >= count && st.indexed + st.failed === st.total) return st;
    if (now() > deadline) throw new Error(`the pair's ${count} documents were not indexed (${st.indexed} of ${st.total})`);
    await sleep(POLL_MS);
  }
}

/** Every push to the graph's connector-document route, as the graph's server saw it (ms from request to answer). */
const PUSH_PATH = '/internal/v1/connector-documents';
const pushTimes: number[] = [];
function timePushes(): void {
  const started = new WeakMap<ServerResponse, number>();
  subscribe('http.server.request.start', (m) => {
    const { request: req, response } = m as { request: IncomingMessage; response: ServerResponse };
    if (req.method === 'POST' && req.url === PUSH_PATH) started.set(response, now());
  });
  subscribe('http.server.response.finish', (m) => {
    const { response } = m as { response: ServerResponse };
    const at = started.get(response);
    if (at !== undefined) pushTimes.push(now() - at);
  });
}

const maxChunkId = async (s: CoreStack, tenantId: string) =>
  s.db.withTenant(tenantId, async (sql) => Number((await sql.query<{ m: string }>(`SELECT coalesce(max(chunk_id), 0)::text AS m FROM graph.chunks`)).rows[0]!.m));

interface Load {
  docs: number;
  acceptedMs: number;
  indexedMs: number;
  chunks: number;
  /** run-once → the site's first request; first → last request; last request → the attempt seen ended. */
  dispatchMs: number;
  crawlMs: number;
  tailMs: number;
  requests: number;
  /** Pushes to the graph's connector-document route, and their summed time in the graph's server. */
  pushes: number;
  pushMs: number;
}

interface Poll {
  ms: number;
  requests: number;
  notModified: number;
  newDocs: number;
  unchanged: number;
  chunksWritten: number;
  status: string;
}

async function main(): Promise<void> {
  requireEnv('LORE_TEST_PG_URL');
  timePushes();
  const web = await new LoopbackWeb({ seed: 12, crawlDelaySeconds: { alpha: 0, beta: 0 }, generatedPages: PAGES }).start();
  const s = await startCoreStack({ checkResponses: false, indexer: { sources: { lookup: web.lookup, web: { minDelayMs: DELAY_MS } }, ...(BATCH > 0 ? { settings: { batchDocuments: BATCH } } : {}) } });
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const fetcher = createWebFetcher({ allowLoopback: true, lookup: web.lookup });
  const alpha = web.siteUrl('alpha');
  const config: WebSourceConfig = { base_url: MODE === 'sitemap' ? `${alpha}/generated/sitemap.xml` : `${alpha}/generated/`, web_connector_type: MODE };
  const wallStart = (): number => performance.timeOrigin + performance.now();
  try {
    /** One load of the site by a fresh pair in a fresh tenant, then a poll of the unchanged site. */
    const round = async (): Promise<{ load: Load; poll: Poll; ids: string[] }> => {
      const t = await s.tenant();
      const api = admin(s, t.key);
      const { connectorId, pairId } = await api.pair(config);

      const mark = web.requests.length;
      const pushMark = pushTimes.length;
      const sentAt = wallStart();
      const started = now();
      const attemptId = await api.runOnce(connectorId);
      const end = await api.ended(pairId, attemptId);
      const acceptedMs = now() - started;
      const endedAt = wallStart();
      const pushed = pushTimes.slice(pushMark);
      if (end.status !== 'success') throw new Error(`the load ended ${end.status}: ${end.error_msg}`);
      const st = await allIndexed(s, t.tenantId, pairId, end.new_docs_indexed as number);
      const indexedMs = now() - started;
      if (st.failed > 0) throw new Error(`${st.failed} documents failed indexing`);
      const docs = await pairDocuments(s, t.tenantId, pairId);
      const reqs = web.requests.slice(mark).filter((r) => r.site === 'alpha');
      const first = reqs[0]?.time ?? sentAt;
      const last = reqs.at(-1)?.time ?? first;
      const load: Load = {
        docs: end.new_docs_indexed as number, acceptedMs, indexedMs, chunks: docs.chunks,
        dispatchMs: first - sentAt, crawlMs: last - first, tailMs: endedAt - last, requests: reqs.length,
        pushes: pushed.length, pushMs: pushed.reduce((a, b) => a + b, 0),
      };

      // The unchanged site polled: nothing is written, nothing embedded.
      const chunkMark = await maxChunkId(s, t.tenantId);
      const pollMark = web.requests.length;
      const pollStarted = now();
      const pollId = await api.runOnce(connectorId);
      const pollEnd = await api.ended(pairId, pollId);
      const pollMs = now() - pollStarted;
      // Anything accepted would be chunked by the graph worker: wait until it is idle, then look.
      await allIndexed(s, t.tenantId, pairId, load.docs);
      await sleep(1000);
      const written = await s.db.withTenant(t.tenantId, async (sql) => (await sql.query(`SELECT 1 FROM graph.chunks WHERE chunk_id > $1`, [chunkMark])).rows.length);
      const pollReqs = web.requests.slice(pollMark).filter((r) => r.site === 'alpha');
      const poll: Poll = {
        ms: pollMs, requests: pollReqs.length, notModified: pollReqs.filter((r) => r.status === 304).length,
        newDocs: pollEnd.new_docs_indexed as number, unchanged: pollEnd.docs_unchanged as number, chunksWritten: written, status: pollEnd.status as string,
      };
      return { load, poll, ids: docs.ids };
    };

    // Warm-up: a whole round (its documents are the pages the loops fetch) and both loops once.
    const warm = await round();
    const urls = [...warm.ids].sort();
    const world = new Set(web.pages('alpha').filter((p) => p.path.startsWith('/generated/') && !p.path.endsWith('.xml')).map((p) => p.url));
    const missing = [...world].filter((u) => !urls.includes(u));
    if (urls.length !== world.size || missing.length > 0) throw new Error(`the connector indexed ${urls.length} documents, the section has ${world.size} (${missing.slice(0, 3).join(', ')} …)`);
    await plainLoop(web, agent, urls);
    await guardedLoop(fetcher, urls);
    await sourceAlone(fetcher, config);

    const plain: number[] = [];
    const guarded: number[] = [];
    const alone: number[] = [];
    const loads: Load[] = [];
    const polls: Poll[] = [];
    let pageBytes = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const p = await plainLoop(web, agent, urls);
      plain.push(p.ms);
      pageBytes = p.bytes;
      guarded.push(await guardedLoop(fetcher, urls));
      const a = await sourceAlone(fetcher, config);
      if (a.docs !== urls.length) throw new Error(`round ${r + 1}: the source alone read ${a.docs} documents, not ${urls.length}`);
      alone.push(a.ms);
      const { load, poll } = await round();
      if (load.docs !== urls.length) throw new Error(`round ${r + 1} indexed ${load.docs} documents, not ${urls.length}`);
      loads.push(load);
      polls.push(poll);
    }

    const n = urls.length;
    const rate = (ms: number) => n / (ms / 1000);
    const plainRate = median(plain.map(rate));
    const guardedRate = median(guarded.map(rate));
    const acceptedRate = median(loads.map((l) => rate(l.acceptedMs)));
    const indexedRate = median(loads.map((l) => rate(l.indexedMs)));
    const ratio = acceptedRate / plainRate;
    const indexedRatio = indexedRate / plainRate;
    const reembedded = polls.reduce((m, p) => Math.max(m, p.chunksWritten), 0);
    const pollWrites = polls.reduce((m, p) => Math.max(m, p.newDocs), 0);
    const f0 = (x: number) => x.toFixed(0);
    const f2 = (x: number) => x.toFixed(2);
    const met = ratio >= TARGET;
    const incrementalMet = reembedded === 0 && pollWrites === 0 && polls.every((p) => p.status === 'success');
    const lines = [
      `web connector benchmark (${MODE}, ${n} pages of alpha's generated section, ${(pageBytes / n / 1024).toFixed(1)} KiB a page; ${ROUNDS} rounds after a warm-up, medians; ${CONCURRENCY} requests at a time everywhere; request starts ${DELAY_MS} ms apart)`,
      `fetch loop, plain node:http   ${f0(median(plain))} ms   ${f0(plainRate)} pages/s   (judged baseline)`,
      `fetch loop, guarded client    ${f0(median(guarded))} ms   ${f0(guardedRate)} pages/s   (the source's SSRF-guarded client with robots.txt; shown, not judged)`,
      `web source alone              ${f0(median(alone))} ms   ${f0(median(alone.map(rate)))} pages/s   (the crawl read to its end in this process, nothing written: the ceiling of indexing; ${f2(median(alone.map(rate)) / plainRate)}x of the plain loop)`,
      `indexing, accepted            ${f0(median(loads.map((l) => l.acceptedMs)))} ms   ${f0(acceptedRate)} pages/s   (run-once → attempt ended: every document in the memory's pipeline)`,
      `indexing, all chunks indexed  ${f0(median(loads.map((l) => l.indexedMs)))} ms   ${f0(indexedRate)} pages/s   (run-once → every document chunked and embedded; ${f0(median(loads.map((l) => l.chunks)))} chunks)`,
      `  where the accepted time goes: run-once → first request ${f0(median(loads.map((l) => l.dispatchMs)))} ms, crawl (first → last request, ${f0(median(loads.map((l) => l.requests)))} requests) ${f0(median(loads.map((l) => l.crawlMs)))} ms, last request → seen ended ${f0(median(loads.map((l) => l.tailMs)))} ms`,
      `  the graph's write          ${f2(median(loads.map((l) => l.pushMs / l.docs)))} ms per document   (${f0(median(loads.map((l) => l.pushes)))} pushes to ${PUSH_PATH}, ${f0(median(loads.map((l) => l.pushMs)))} ms in all, timed in the graph's server; per round: ${loads.map((l) => f2(l.pushMs / l.docs)).join(', ')} ms)`,
      `ratio, accepted / plain loop  ${f2(ratio)}x   (target >= ${TARGET}x)   per round: ${loads.map((l, i) => f2(rate(l.acceptedMs) / rate(plain[i]!))).join(', ')}`,
      `ratio, indexed / plain loop   ${f2(indexedRatio)}x   (shown, not judged)`,
      `incremental poll, unchanged   ${f0(median(polls.map((p) => p.ms)))} ms;  requests answered 304 ${polls.map((p) => `${p.notModified} of ${p.requests}`).join(', ')}${MODE === 'sitemap' ? ' (sitemap: an unchanged lastmod needs no request)' : ''};  documents written ${polls.map((p) => p.newDocs).join(', ')}, unchanged ${polls.map((p) => p.unchanged).join(', ')};  chunks written ${polls.map((p) => p.chunksWritten).join(', ')}   (target 0)`,
      `verdict                       throughput ${met ? 'target met' : 'target MISSED'}${DELAY_MS > 0 ? ` (with request starts ${DELAY_MS} ms apart both sides wait on the spacing: not the judged setting, which is --delay-ms 0)` : ''}; incremental ${incrementalMet ? 'target met (0 chunks re-embedded)' : 'target MISSED'}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    if (!met || !incrementalMet) process.exitCode = 1;
  } finally {
    fetcher.close();
    agent.destroy();
    await s.close();
    await web.close();
    closeIdleHttpConnections();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
