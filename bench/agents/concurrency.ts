/**
 * Workflow concurrency benchmark (issue 13): 100 search workflows running at once in one agents worker against an
 * idle run (one workflow alone) in the same script. Printed as ratios, load over idle:
 *
 * - the status route's latency (`GET /company-search/status/{id}`, `/people-search/status/{id}` through the
 *   gateway), p95 while the workflows run — target <= 2x the idle run's;
 * - the delivery lag of progress, p95 — target <= 2x the idle run's: the time from an event being written to the
 *   workflow's progress stream (its Redis entry id: the Redis server's clock at XADD, corrected by the offset
 *   between this process's clock and Redis's TIME) to a subscribed client holding its frame. The client is a client
 *   of the generic workflow API's server-sent streams through the gateway (`POST /api/workflow/start` answers the
 *   company workflow's stream; a people workflow is followed with `GET /api/workflow/stream/{thread_id}`), so the
 *   path measured is the API's: woken by the stream entry, it reads the event log and writes the frame. Frames of
 *   events already written when the client's stream opened are history, not delivery, and are not counted. The
 *   end-to-end lag from the event's row in the event log (the frame's `at`: the writing transaction's time) to the
 *   client is printed beside it, not judged. `--via stream` reads the Redis stream directly instead (XREAD BLOCK
 *   through the runtime's `ProgressStreams.waitFor`, one connection a subscriber, as the API's reader does);
  * - memory per workflow: the V8 heap the worker process holds right after a full collection (bench/support/gc-probe.mjs,
 *   loaded into the child with --expose-gc and asked by SIGUSR2) at the moment the most workflows are live, less the
 *   same figure quiet just before, divided by the live workflows (its `lore_agents_workflows_running` gauge then).
 *   Collections pause the worker, so this runs as a third round, the same load again, after the measured one; the
 *   measured round's figures without collections (its /metrics: peak RSS and heap in use, garbage included) are
 *   printed beside.
 *
 *   bash test/infra/up.sh && npm run bench:workflows [-- --workflows 100 --idle-runs 30 --rounds 2 --poll-ms 50 --target 100 --via sse|stream
 *   --api-pool 10 --profile-worker DIR]
 *
 * The worker is `services/agents/src/worker-main.ts` as a child process (the agents-worker deployment as
 * configuration.md runs it, `LORE_AGENTS_WORKFLOW_MAX_RUNNING` set to the workflow count, everything else its
 * default), so its memory is its own and not this process's: here run the gateway and the agents API of the
 * integration suites' stack (test/agents/harness.ts; real PostgreSQL, Redis and Kafka), the status poller and the
 * stream subscribers. The child relays the outbox (the stack runs no worker). No language model, no web search:
 * each workflow builds a list of up to `--target` rows (100) from the tenant's directory, seeded with the agents
 * test world's 800 records; ten broad prompts (companies and people), in turn, so that a run is long enough for all
 * the workflows to be live at once.
 *
 * The status poller sends one request at a time, `--poll-ms` apart, to the running workflows in turn (idle: the one
 * workflow), in both phases; only answers that still show the workflow running are counted. The idle phase runs
 * `--idle-runs` workflows one after another. `--rounds` rounds of idle then load are run and their samples pooled
 * (each round's ratios printed too), so a busy minute on the shared machine does not fall on one side only.
 * `--api-pool` sizes the API process's database pool (default 10, as deployed), to test where delivery waits.
 * `--profile-worker DIR` runs the worker child under V8's CPU profiler (`--cpu-prof`), its profile written to DIR when
 * it exits; the profiler slows the worker, so such a run's figures are not comparable. Prints p50/p95 of each phase, the ratios and a verdict; exits 1 only
 * on a crash (a missed target is printed).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { subscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { upsertDirectoryRecords } from '@lore/agents';
import { RedisProgressStreams } from '@lore/runtime';
import { startAgentsStack, type AgentsStack } from '../../test/agents/harness';
import { IDENTITY_SECRET, type TenantFixture } from '../../test/gateway/harness';
import { generateAgentsWorld, worldDirectoryRecords } from '../../test/support/agents-world';
import { requireEnv, uniqueSuffix } from '../../test/support/infra';
import { closeIdleHttpConnections } from '../../test/support/http';
import { median } from '../support/stats';

/** The progress streams' key prefix, the same for this script's API and the worker child. */
const STREAMS_PREFIX = `bench-agents-${process.pid}:`;

const argNum = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const WORKFLOWS = argNum('workflows', 100);
const IDLE_RUNS = argNum('idle-runs', 30);
const ROUNDS = argNum('rounds', 2);
const POLL_MS = argNum('poll-ms', 50);
const TARGET_ROWS = argNum('target', 100);
/** The agents API process's database pool (10, as PostgresDb's default in the deployments). */
const API_POOL = argNum('api-pool', 10);
const PROFILE_WORKER = process.argv.includes('--profile-worker') ? process.argv[process.argv.indexOf('--profile-worker') + 1] : undefined;
const VIA = process.argv.includes('--via') ? process.argv[process.argv.indexOf('--via') + 1] : 'sse';
if (VIA !== 'sse' && VIA !== 'stream') throw new Error('--via is sse or stream');
const TARGET = 2;
const ROOT = join(__dirname, '..', '..');
const ENDED = new Set(['completed', 'stopped', 'error']);

/** Broad prompts (tens to hundreds of matching records each), so a run is long enough to overlap the others. */
const PROMPTS: Array<[string, 'company' | 'people']> = [
  ['companies in Germany', 'company'],
  ['companies with more than 50 employees', 'company'],
  ['companies founded after 2005', 'company'],
  ['companies in Europe', 'company'],
  ['companies with fewer than 1,000 employees', 'company'],
  ['people in London', 'people'],
  ['managers', 'people'],
  ['people working in sales', 'people'],
  ['directors', 'people'],
  ['people in Germany', 'people'],
];

type Json = Record<string, any>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** The worker's own figures, from its /metrics. */
interface WorkerSample {
  at: number;
  rss: number;
  heap: number;
  running: number;
  loopP99: number;
  /** CPU seconds the process has used (user + system). */
  cpu: number;
}

async function sampleWorker(metricsUrl: string): Promise<WorkerSample> {
  const text = await (await fetch(metricsUrl)).text();
  const one = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  const running = [...text.matchAll(/^lore_agents_workflows_running\{[^}]*\} (\S+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
  return {
    at: now(),
    rss: one('lore_process_process_resident_memory_bytes'),
    heap: one('lore_process_nodejs_heap_size_used_bytes'),
    running,
    loopP99: one('lore_process_nodejs_eventloop_lag_p99_seconds'),
    cpu: one('lore_process_process_cpu_seconds_total'),
  };
}

/** A frame (or stream entry) as the client held it. */
interface Frame {
  seq: number;
  /** The event row's time (its transaction's), ISO. */
  at: string;
  /** Epoch ms when the client held it. */
  receivedAt: number;
}

/** One workflow as a client follows it. */
interface Watched {
  thread: string;
  kind: 'company' | 'people';
  /** Its progress stream's Redis key. */
  key: string;
  ended: boolean;
  frames: Frame[];
  /** Epoch ms when the client's stream opened: entries written before are history. */
  openedAt: number;
  startedAt: number;
  endedAt: number;
}

/** PostgreSQL's view of the test database: backends by what they are doing. */
interface PgSample {
  active: number;
  idleInTransaction: number;
  /** Active backends waiting, by wait_event_type (Lock, LWLock, IO, Client, IPC ...). */
  waiting: Record<string, number>;
}

async function samplePg(pg: Client): Promise<PgSample> {
  const r = await pg.query<{ state: string | null; wait: string | null; n: number }>(
    `SELECT state, wait_event_type AS wait, count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() GROUP BY 1, 2`,
  );
  const out: PgSample = { active: 0, idleInTransaction: 0, waiting: {} };
  for (const row of r.rows) {
    if (row.state === 'active') {
      out.active += row.n;
      if (row.wait) out.waiting[row.wait] = (out.waiting[row.wait] ?? 0) + row.n;
    } else if (row.state?.startsWith('idle in transaction')) out.idleInTransaction += row.n;
  }
  return out;
}

function pgSummary(samples: PgSample[]): string {
  if (samples.length === 0) return 'no samples';
  const mean = (f: (x: PgSample) => number) => (samples.reduce((n, x) => n + f(x), 0) / samples.length).toFixed(1);
  const kinds = [...new Set(samples.flatMap((x) => Object.keys(x.waiting)))].sort();
  const waits = kinds.map((k) => `${k} ${mean((x) => x.waiting[k] ?? 0)}`).join(', ');
  return `active ${mean((x) => x.active)} (max ${Math.max(...samples.map((x) => x.active))}), idle in transaction ${mean((x) => x.idleInTransaction)}; of the active, waiting on: ${waits || 'nothing'}`;
}

/**
 * Time spent inside the agents service per request, by path kind, from Node's own HTTP server diagnostics (request
 * read → answer finished), for the agents server's port only (the gateway in this process is another server).
 */
function timeAgentsServer(port: () => number, sink: () => { status: number[] } | null): void {
  const started = new WeakMap<ServerResponse, number>();
  subscribe('http.server.request.start', (m) => {
    const { request: req, response } = m as { request: IncomingMessage; response: ServerResponse };
    if (req.socket.localPort === port() && /\/status\//.test(req.url ?? '')) started.set(response, performance.now());
  });
  subscribe('http.server.response.finish', (m) => {
    const { response } = m as { response: ServerResponse };
    const at = started.get(response);
    if (at !== undefined) sink()?.status.push(performance.now() - at);
  });
}

/** Times every transaction the agents API process opens (`db.withTenant`): instrumentation of this process only. */
function timeTransactions(db: AgentsStack['db'], sink: () => number[] | null): void {
  const original = db.withTenant.bind(db);
  db.withTenant = (async (tenantId: string, fn: Parameters<typeof original>[1]) => {
    const at = performance.now();
    try {
      return await original(tenantId, fn);
    } finally {
      sink()?.push(performance.now() - at);
    }
  }) as typeof db.withTenant;
}

async function main(): Promise<void> {
  requireEnv('LORE_TEST_PG_URL');
  const redisUrl = requireEnv('LORE_TEST_REDIS_URL');
  process.stdout.write(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')} (1, 5, 15 min) on ${cpus().length} cores\n`);
  // Streams without a key prefix: the API (the started event) and the worker child write the same keys, as in a
  // cluster. Tenant ids are fresh, so the keys are this run's alone; they are deleted at the end.
  const s: AgentsStack = await startAgentsStack({ checkResponses: false, dbMaxConnections: API_POOL, service: { streams: new RedisProgressStreams(redisUrl, { keyPrefix: STREAMS_PREFIX }) } });
  const reader = new RedisProgressStreams(redisUrl, { keyPrefix: STREAMS_PREFIX });
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  const world = generateAgentsWorld(1);
  let child: ChildProcess | undefined;
  const logs: string[] = [];
  const keys: string[] = [];
  const pg = new Client({ connectionString: s.database.ownerUrl });
  await pg.connect();
  /** Where this process's instrumentation writes: the phase being measured, or nowhere. */
  let phase: { status: number[]; tx: number[] } | null = null;
  timeAgentsServer(() => Number(new URL(s.agentsServer.url).port), () => phase);
  timeTransactions(s.db, () => phase?.tx ?? null);
  try {
    const t: TenantFixture = await s.tenant();
    await upsertDirectoryRecords(s.db, t.tenantId, worldDirectoryRecords(world).map((r) => ({ kind: r.kind, data: r.data, source: r.source })));

    const port = await freePort();
    // --expose-gc and the probe (bench/support/gc-probe.mjs) only let this script ask for a collection and the memory
    // held after it (SIGUSR2); the worker itself is worker-main as deployed.
    child = spawn(process.execPath, [...(PROFILE_WORKER ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_WORKER}`] : []), '--expose-gc', '--conditions=lore-src', '--import', 'tsx', '--import', join(ROOT, 'bench/support/gc-probe.mjs'), join(ROOT, 'services/agents/src/worker-main.ts')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        LORE_LOG_LEVEL: 'warn',
        LORE_DATABASE_URL: s.database.url,
        LORE_IDENTITY_SECRET: IDENTITY_SECRET,
        LORE_REDIS_URL: redisUrl,
      LORE_AGENTS_REDIS_PREFIX: STREAMS_PREFIX,
        LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
        LORE_KAFKA_PREFIX: s.kafkaPrefix,
        LORE_AGENTS_CONSUMER_GROUP: `agents-worker-bench-${uniqueSuffix()}`,
        LORE_AGENTS_WORKER_PORT: String(port),
        LORE_AGENTS_HOST: '127.0.0.1',
        LORE_AGENTS_RELAY: 'true',
        // One more than the workflows: a worker keeps one slot for another tenant (docs/agents.md, "The worker").
        LORE_AGENTS_WORKFLOW_MAX_RUNNING: String(Math.min(256, WORKFLOWS + 1)),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const probes: Array<(m: { heap: number; rss: number }) => void> = [];
    let line = '';
    child.stdout?.on('data', (d: Buffer) => {
      line += d.toString();
      for (let i = line.indexOf('\n'); i >= 0; i = line.indexOf('\n')) {
        const l = line.slice(0, i);
        line = line.slice(i + 1);
        if (l.startsWith('lore-gc-probe ')) probes.shift()?.(JSON.parse(l.slice(14)) as { heap: number; rss: number });
        else logs.push(l);
      }
    });
    child.stderr?.on('data', (d: Buffer) => logs.push(d.toString()));
    /** The worker's heap in use and resident set right after a full collection. */
    const probeGc = (): Promise<{ heap: number; rss: number }> =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the worker did not answer the GC probe in 30 s')), 30_000);
        probes.push((m) => {
          clearTimeout(timer);
          resolve(m);
        });
        child!.kill('SIGUSR2');
      });
    const ops = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`the worker exited: ${logs.join('')}`);
      const ok = await fetch(`${ops}/readyz`).then((r) => r.ok).catch(() => false);
      if (ok) break;
      if (i > 1200) throw new Error(`the worker was not ready in 120 s: ${logs.join('')}`);
      await sleep(100);
    }

    // This process's clock against Redis's (entry ids are Redis's milliseconds): the offset of the tightest of 20.
    let offset = 0;
    let best = Infinity;
    for (let i = 0; i < 20; i++) {
      const before = Date.now();
      const [sec, usec] = (await redis.call('TIME')) as [string, string];
      const after = Date.now();
      if (after - before < best) {
        best = after - before;
        offset = Number(sec) * 1000 + Number(usec) / 1000 - (before + after) / 2;
      }
    }

    const auth = { authorization: `Bearer ${t.key}` };
    const gatewayUrl = new URL(s.gateway.publicUrl);
    let prompt = 0;

    /** A request through the gateway whose answer is read as server-sent events, frame by frame, to its end. */
    const sse = (method: string, path: string, body: unknown, onOpen: () => void, onFrame: (f: Json) => void): Promise<void> =>
      new Promise((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const req = request(
          {
            host: gatewayUrl.hostname,
            port: gatewayUrl.port,
            method,
            path,
            headers: { ...auth, accept: 'text/event-stream', ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
          },
          (res) => {
            if (res.statusCode !== 200 || !/^text\/event-stream/.test(res.headers['content-type'] ?? '')) {
              let text = '';
              res.on('data', (c: Buffer) => (text += c.toString()));
              res.on('end', () => reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`)));
              return;
            }
            onOpen();
            let buf = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              buf += chunk;
              for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
                const block = buf.slice(0, i);
                buf = buf.slice(i + 2);
                const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
                if (data) onFrame(JSON.parse(data) as Json);
              }
            });
            res.on('end', resolve);
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(payload);
      });

    /**
     * Starts the next prompt's workflow and follows it as a client to its end: `live` gets it once it is written
     * (for the status poller).
     */
    const run = async (live: Watched[]): Promise<Watched> => {
      const [text, kind] = PROMPTS[prompt++ % PROMPTS.length]!;
      const w: Watched = { thread: '', kind, key: '', ended: false, frames: [], openedAt: NaN, startedAt: now(), endedAt: NaN };
      const known = (thread: string) => {
        w.thread = thread;
        w.key = `agents:${t.tenantId}:workflow:${thread}`;
        keys.push(w.key);
      };
      const onFrame = (f: Json) => {
        w.frames.push({ seq: Number(f.seq), at: String(f.at ?? ''), receivedAt: Date.now() });
        if (ENDED.has(String(f.status))) w.ended = true;
      };
      // A company workflow starts with its stream (the start's answer); a people workflow answers its thread id.
      let startStream: Promise<void> | null = null;
      if (kind === 'company') {
        known(randomUUID());
        let opened!: () => void;
        const open = new Promise<void>((r) => (opened = r));
        startStream = sse('POST', '/api/workflow/start', { prompt: text, total_target: TARGET_ROWS, threadId: w.thread }, () => {
          if (VIA === 'sse') w.openedAt = Date.now();
          // The start's stream opens once the workflow is written: from then on its status is polled.
          live.push(w);
          opened();
        }, VIA === 'sse' ? onFrame : () => undefined);
        await Promise.race([open, startStream]);
      } else {
        const r = await s.call('POST', '/api/workflow/people/start', auth, { prompt: text, total_target: TARGET_ROWS });
        if (r.status !== 200) throw new Error(`people start: ${r.status} ${r.text}`);
        known(r.json as unknown as string);
        live.push(w);
        if (VIA === 'sse') await sse('GET', `/api/workflow/stream/${w.thread}`, undefined, () => void (w.openedAt = Date.now()), onFrame);
      }
      if (VIA === 'stream') {
        // The Redis stream read directly, as the API's reader reads it: XREAD BLOCK on a connection of its own.
        w.openedAt = Date.now();
        let last = '0-0';
        const deadline = now() + 600_000;
        while (!w.ended) {
          if (now() > deadline) throw new Error(`workflow ${w.thread} did not end in 10 minutes`);
          const entries = await reader.waitFor(w.key, last, 5_000, 1000);
          const at = Date.now();
          for (const e of entries) {
            w.frames.push({ seq: Number(e.fields.seq), at: e.fields.at ?? '', receivedAt: at });
            if (e.fields.type && ENDED.has(e.fields.type)) w.ended = true;
            last = e.id;
          }
        }
      }
      if (startStream) await startStream;
      w.ended = true;
      w.endedAt = now();
      return w;
    };

    /**
     * The lags of a followed workflow: each frame's stream entry (by seq, read back from the stream) to the moment
     * the client held it, for entries written after the client's stream opened; and the event row's time to then.
     */
    const lagsOf = async (ws: Watched[]): Promise<{ stream: number[]; log: number[]; history: number }> => {
      const stream: number[] = [];
      const log: number[] = [];
      let history = 0;
      for (const w of ws) {
        const written = new Map((await reader.read(w.key, '0-0', 1000)).map((e) => [Number(e.fields.seq), Number(e.id.split('-')[0]) - offset]));
        for (const f of w.frames) {
          const at = written.get(f.seq);
          if (at === undefined || at < w.openedAt) {
            history++;
            continue;
          }
          stream.push(f.receivedAt - at);
          if (f.at) log.push(f.receivedAt - Date.parse(f.at));
        }
      }
      return { stream, log, history };
    };

    /** One status call at a time, POLL_MS apart, to the running workflows in turn, until none is left. */
    const poll = async (live: () => Watched[], until: () => boolean, latencies: number[]): Promise<{ calls: number; endedAnswers: number }> => {
      let i = 0;
      let calls = 0;
      let endedAnswers = 0;
      while (!until()) {
        const ws = live();
        if (ws.length === 0) {
          await sleep(5);
          continue;
        }
        const w = ws[i++ % ws.length]!;
        const at = now();
        const r = await s.call('GET', w.kind === 'company' ? `/api/workflow/status/${w.thread}` : `/api/workflow/people/status/${w.thread}`, auth);
        const ms = now() - at;
        calls++;
        if (r.status !== 200) throw new Error(`status: ${r.status} ${r.text}`);
        if (ENDED.has(r.json.status as string)) endedAnswers++;
        else latencies.push(ms);
        await sleep(POLL_MS);
      }
      return { calls, endedAnswers };
    };

    /** Samples the worker every 200 ms until `until`. */
    const sampler = async (until: () => boolean, out: WorkerSample[], pgOut: PgSample[]) => {
      while (!until()) {
        out.push(await sampleWorker(`${ops}/metrics`));
        pgOut.push(await samplePg(pg));
        await sleep(200);
      }
    };

    // Warm-up: one workflow of each kind end to end (module loading, pools, the consumer's first fetch), not measured.
    await run([]);
    prompt = PROMPTS.findIndex(([, k]) => k === 'people');
    await run([]);
    prompt = 0;

    const quietSamples = async (): Promise<WorkerSample[]> => {
      await sleep(1000);
      const out: WorkerSample[] = [];
      for (let i = 0; i < 10; i++) {
        out.push(await sampleWorker(`${ops}/metrics`));
        await sleep(200);
      }
      return out;
    };
    const busy = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1e6;

    // ROUNDS rounds, each an idle phase then a load phase; the samples of all rounds are pooled (the machine is
    // shared: interleaving keeps a slow minute from landing on one side only), and each round's ratios are printed.
    const quietBefore = await quietSamples();
    let quiet: WorkerSample[] = quietBefore;
    const idlePhase = { status: [] as number[], tx: [] as number[] };
    const loadPhase = { status: [] as number[], tx: [] as number[] };
    const idlePg: PgSample[] = [];
    const loadPg: PgSample[] = [];
    const idleStatus: number[] = [];
    const loadStatus: number[] = [];
    const idleRuns: Watched[] = [];
    const loadRuns: Watched[] = [];
    const idleSamples: WorkerSample[] = [];
    const loadSamples: WorkerSample[] = [];
    const idleLoop = monitorEventLoopDelay({ resolution: 10 });
    const loadLoop = monitorEventLoopDelay({ resolution: 10 });
    let idleWall = 0;
    let loadWall = 0;
    let idleCpuS = 0;
    let loadCpuS = 0;
    let idleWorkerCpuS = 0;
    let loadWorkerCpuS = 0;
    const loadMsList: number[] = [];
    const polled = { endedAnswers: 0 };
    const perRound: Array<{ status: number; delivery: number; load: string }> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const roundLoad = loadavg()[0]!.toFixed(2);
      // Idle: one workflow alone, IDLE_RUNS times.
      const mark = { status: idleStatus.length, runs: idleRuns.length, loadStatus: loadStatus.length, loadRuns: loadRuns.length };
      phase = idlePhase;
      idleLoop.enable();
      let cpu0 = process.cpuUsage();
      let worker0 = (await sampleWorker(`${ops}/metrics`)).cpu;
      let started = now();
      for (let i = 0; i < IDLE_RUNS; i++) {
        const live: Watched[] = [];
        let done = false;
        const [, p] = await Promise.all([
          run(live).then((w) => {
            idleRuns.push(w);
            done = true;
          }),
          poll(() => live.filter((w) => !w.ended), () => done, idleStatus),
          sampler(() => done, idleSamples, idlePg),
        ]);
        polled.endedAnswers += p.endedAnswers;
      }
      idleWall += (now() - started) / 1000;
      phase = null;
      idleLoop.disable();
      idleWorkerCpuS += (await sampleWorker(`${ops}/metrics`)).cpu - worker0;
      idleCpuS += busy(process.cpuUsage(cpu0));

      // Quiet: the worker's memory with nothing running, just before the load.
      quiet = await quietSamples();

      // Load: WORKFLOWS started at once, each followed by its own client from the moment its stream opens.
      phase = loadPhase;
      loadLoop.enable();
      cpu0 = process.cpuUsage();
      worker0 = quiet.at(-1)!.cpu;
      started = now();
      const live: Watched[] = [];
      let allDone = false;
      const [runs, p] = await Promise.all([
        Promise.all(Array.from({ length: WORKFLOWS }, () => run(live))).finally(() => void (allDone = true)),
        poll(() => live.filter((w) => !w.ended), () => allDone, loadStatus),
        sampler(() => allDone, loadSamples, loadPg),
      ]);
      const ms = now() - started;
      loadMsList.push(ms);
      loadWall += ms / 1000;
      phase = null;
      loadLoop.disable();
      loadWorkerCpuS += (await sampleWorker(`${ops}/metrics`)).cpu - worker0;
      loadCpuS += busy(process.cpuUsage(cpu0));
      loadRuns.push(...runs);
      polled.endedAnswers += p.endedAnswers;
      const iLags = await lagsOf(idleRuns.slice(mark.runs));
      const lLags = await lagsOf(runs);
      perRound.push({
        status: percentile(loadStatus.slice(mark.loadStatus), 95) / percentile(idleStatus.slice(mark.status), 95),
        delivery: percentile(lLags.stream, 95) / percentile(iLags.stream, 95),
        load: `${roundLoad}→${loadavg()[0]!.toFixed(2)}`,
      });
      if (round < ROUNDS - 1) await sleep(1000);
    }
    const quietRss = median(quiet.map((q) => q.rss));
    const quietHeap = median(quiet.map((q) => q.heap));
    const loadMs = median(loadMsList);
    const idleWorkerCpu = idleWorkerCpuS / idleWall;
    const loadWorkerCpu = loadWorkerCpuS / loadWall;
    const idleLoopP99 = idleLoop.percentile(99) / 1e6;
    const loadLoopP99 = loadLoop.percentile(99) / 1e6;
    const idleLags = await lagsOf(idleRuns);
    const loadLags = await lagsOf(loadRuns);
    const idleDur = idleRuns.map((w) => w.endedAt - w.startedAt);
    const loadDur = loadRuns.map((w) => w.endedAt - w.startedAt);

    // Memory round: the same load again, unmeasured for latency (a full collection pauses the worker), the worker
    // asked every 500 ms for the memory it holds after a collection, beside how many workflows are live then.
    await sleep(1000);
    const quietGc = await probeGc();
    const memory: Array<{ running: number; heap: number; rss: number }> = [];
    let memoryDone = false;
    const memoryStarted = now();
    await Promise.all([
      Promise.all(Array.from({ length: WORKFLOWS }, () => run([]))).finally(() => void (memoryDone = true)),
      (async () => {
        while (!memoryDone) {
          await sleep(500);
          if (memoryDone) break;
          const { running } = await sampleWorker(`${ops}/metrics`);
          memory.push({ running, ...(await probeGc()) });
        }
      })(),
    ]);
    const memoryMs = now() - memoryStarted;
    const mostLive = memory.reduce((a, b) => (b.running > a.running ? b : a), { running: 0, heap: NaN, rss: NaN });
    const perWorkflow = memory.filter((m) => m.running >= mostLive.running / 2).map((m) => (m.heap - quietGc.heap) / m.running);

    // Every workflow completed, with its rows.
    const outcomes = await s.db.withTenant(t.tenantId, (sql) =>
      sql.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM agents.workflows WHERE tenant_id = $1 GROUP BY status`, [t.tenantId]),
    );
    const statuses = Object.fromEntries(outcomes.rows.map((r) => [r.status, r.n]));
    const events = await s.db.withTenant(t.tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM agents.workflow_events WHERE tenant_id = $1`, [t.tenantId]));

    const rows = await s.db.withTenant(t.tenantId, (sql) =>
      sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM agents.list_rows r JOIN agents.workflows w ON w.tenant_id = r.tenant_id AND w.list_id = r.list_id WHERE w.tenant_id = $1`, [t.tenantId]),
    );

    const none: WorkerSample = { at: 0, rss: NaN, heap: NaN, running: 0, loopP99: NaN, cpu: NaN };
    const peak = loadSamples.reduce((a, b) => (b.running > a.running || (b.running === a.running && b.rss > a.rss) ? b : a), loadSamples[0] ?? none);
    const max = (xs: number[]) => xs.reduce((m, x) => Math.max(m, x), -Infinity);
    const peakRss = max(loadSamples.map((x) => x.rss));
    const peakHeap = max(loadSamples.map((x) => x.heap));
    const idlePeakRss = max(idleSamples.map((x) => x.rss));
    const idlePeakHeap = max(idleSamples.map((x) => x.heap));
    const mib = (b: number) => (b / 1024 / 1024).toFixed(1);
    const kib = (b: number) => (b / 1024).toFixed(0);
    const f0 = (x: number) => x.toFixed(0);
    const f1 = (x: number) => x.toFixed(1);
    const f2 = (x: number) => x.toFixed(2);

    const statusRatio = percentile(loadStatus, 95) / percentile(idleStatus, 95);
    const streamRatio = percentile(loadLags.stream, 95) / percentile(idleLags.stream, 95);
    const logRatio = percentile(loadLags.log, 95) / percentile(idleLags.log, 95);
    const statusMet = statusRatio <= TARGET;
    const streamMet = streamRatio <= TARGET;
    const client = VIA === 'sse' ? 'server-sent streams of the generic workflow API through the gateway' : 'the Redis progress streams read directly (XREAD BLOCK)';
    const lines = [
      `workflow concurrency benchmark: ${WORKFLOWS} workflows at once in one agents-worker child vs one alone (${IDLE_RUNS} idle runs one after another), ${ROUNDS} rounds of idle then load, pooled; lists of up to ${TARGET_ROWS} rows from the test world's 800 directory records; progress read from ${client}; status polled one call at a time ${POLL_MS} ms apart; the API's database pool ${API_POOL}; clock offset to Redis ${f1(offset)} ms (±${f1(best / 2)})`,
      `idle  status route     p50 ${f1(median(idleStatus))} ms  p95 ${f1(percentile(idleStatus, 95))} ms  (${idleStatus.length} answers while running)`,
      `load  status route     p50 ${f1(median(loadStatus))} ms  p95 ${f1(percentile(loadStatus, 95))} ms  (${loadStatus.length} answers while running; ${polled.endedAnswers} of ended workflows not counted)`,
      `idle  delivery         p50 ${f1(median(idleLags.stream))} ms  p95 ${f1(percentile(idleLags.stream, 95))} ms  (${idleLags.stream.length} events, stream entry written → client holds its frame; ${idleLags.history} written before the client's stream opened, not counted)`,
      `load  delivery         p50 ${f1(median(loadLags.stream))} ms  p95 ${f1(percentile(loadLags.stream, 95))} ms  (${loadLags.stream.length} events; ${loadLags.history} history)`,
      `idle  log → client     p50 ${f1(median(idleLags.log))} ms  p95 ${f1(percentile(idleLags.log, 95))} ms  (the event row's transaction time → client; shown, not judged)`,
      `load  log → client     p50 ${f1(median(loadLags.log))} ms  p95 ${f1(percentile(loadLags.log, 95))} ms`,
      `workflow duration      idle median ${f0(median(idleDur))} ms; load median ${f0(median(loadDur))} ms, all ${WORKFLOWS} ended ${f0(loadMs)} ms after the first start (median of the rounds) (${f2((median(idleDur) * WORKFLOWS) / loadMs)}x the throughput of one at a time); workflows ${JSON.stringify(statuses)}, ${rows.rows[0]!.n} rows, ${events.rows[0]!.n} events`,
      `CPU (cores busy)       worker child: idle ${f2(idleWorkerCpu)}, load ${f2(loadWorkerCpu)}; this process (gateway, API, clients): idle ${f2(idleCpuS / idleWall)}, load ${f2(loadCpuS / loadWall)}; of ${cpus().length} cores`,
      `worker memory, no GC   quiet RSS ${mib(quietRss)} MiB, heap ${mib(quietHeap)} MiB; one workflow alone: peak RSS +${mib(idlePeakRss - median(quietBefore.map((q) => q.rss)))} MiB, heap +${mib(idlePeakHeap - median(quietBefore.map((q) => q.heap)))} MiB over the quiet figures before the idle runs`,
      `                       measured load: most live at once ${peak.running} (RSS ${mib(peak.rss)} MiB, heap ${mib(peak.heap)} MiB then); peak RSS ${mib(peakRss)} MiB, peak heap ${mib(peakHeap)} MiB`,
      `memory, after GC       quiet heap ${mib(quietGc.heap)} MiB, RSS ${mib(quietGc.rss)} MiB; most live at once ${mostLive.running}: heap ${mib(mostLive.heap)} MiB, RSS ${mib(mostLive.rss)} MiB (${memory.length} probes over the ${f0(memoryMs)} ms memory round)`,
      `memory per workflow    heap held ${kib((mostLive.heap - quietGc.heap) / Math.max(1, mostLive.running))} KiB at the most-live probe (median over the probes with at least half as many live: ${kib(median(perWorkflow))} KiB); RSS ${kib((mostLive.rss - quietGc.rss) / Math.max(1, mostLive.running))} KiB (the resident set does not follow the heap: V8 and the allocator give pages back on their own schedule)`,
      `  without GC (garbage included)    RSS ${kib((peakRss - quietRss) / Math.max(1, peak.running))} KiB, heap ${kib((peakHeap - quietHeap) / Math.max(1, peak.running))} KiB  ((peak − quiet) / ${peak.running} live; at the most-live sample itself: RSS ${kib((peak.rss - quietRss) / Math.max(1, peak.running))} KiB, heap ${kib((peak.heap - quietHeap) / Math.max(1, peak.running))} KiB)`,
      `status, in the service p50/p95 inside the agents service: idle ${f1(median(idlePhase.status))}/${f1(percentile(idlePhase.status, 95))} ms, load ${f1(median(loadPhase.status))}/${f1(percentile(loadPhase.status, 95))} ms (the rest is the gateway and the hop)`,
      `API transactions       p50/p95 idle ${f1(median(idlePhase.tx))}/${f1(percentile(idlePhase.tx, 95))} ms (${idlePhase.tx.length}), load ${f1(median(loadPhase.tx))}/${f1(percentile(loadPhase.tx, 95))} ms (${loadPhase.tx.length}): every db.withTenant of this process (status snapshots, stream reads of the event log, starts), pool wait included`,
      `PostgreSQL backends    idle: ${pgSummary(idlePg)}`,
      `                       load: ${pgSummary(loadPg)}`,
      `event-loop delay p99   worker: idle ${f1(median(idleSamples.map((x) => x.loopP99)) * 1000)} ms, load ${f1(median(loadSamples.map((x) => x.loopP99)) * 1000)} ms (median of its /metrics samples' p99); this process: idle ${f1(idleLoopP99)} ms, load ${f1(loadLoopP99)} ms`,
      `ratio, status p95      ${f2(statusRatio)}x   (target <= ${TARGET}x; the rounds alone: ${perRound.map((r) => `${f2(r.status)}x`).join(', ')})`,
      `ratio, delivery p95    ${f2(streamRatio)}x   (target <= ${TARGET}x; the rounds alone: ${perRound.map((r) => `${f2(r.delivery)}x`).join(', ')}; log → client ${f2(logRatio)}x, shown)`,
      `machine                1-minute load average over the rounds ${perRound.map((r) => r.load).join(', ')} (2 cores are busy at 2.0)`,
      `verdict                status route ${statusMet ? 'target met' : 'target MISSED'}; progress delivery ${streamMet ? 'target met' : 'target MISSED'}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([new Promise((r) => child!.once('exit', r)), sleep(15_000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500)).catch(() => 0);
    redis.disconnect();
    await pg.end();
    await reader.close();
    await s.close();
    closeIdleHttpConnections();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
