/**
 * Load and soak (issue 18, docs/soak.md): a bounded mixed workload at a fixed arrival rate against the cluster-mode
 * processes, each its compiled entry point on its own — gateway, webhooks worker, graph API, graph worker, core,
 * agents API and agents worker — on the real PostgreSQL, Redis and Kafka of the test infrastructure, started the way
 * test/e2e/cluster-install.int.test.ts starts them (a database prepared as install.md says, the chart's migrations
 * script, a tenant from the admin CLI, a webhook subscription to a receiver on loopback).
 *
 *   bash test/infra/up.sh pg redis kafka && set -a && . ~/.cache/lore/run/env && set +a && npx tsc -b
 *   npm run soak [-- --minutes 10 --warmup-minutes 2 --rate 4 --sample-seconds 5 --gc-seconds 15 --drain-seconds 90 --series file.json]
 *
 * The workload is open loop: requests are sent at fixed times whatever the answers do (a slow answer does not slow
 * the arrivals). Of `--rate` requests a second, 35% ingest a note (POST /api/v1/memory/ingest), 35% search
 * (POST /api/v1/memory/search), 25% send a chat message (POST /api/chat/send-chat-message, stream false, in one
 * session created at the start) and 5% start a company search (POST /company-search/start), each followed by a
 * status poll a second (GET /company-search/status/{id}) until it ends. Before the clock starts, a company CSV is
 * imported (the workflows' directory). Every memory.ingest.completed is expected at the receiver: the delivery lag
 * (ingest accepted → received, polled every 100 ms) is a route of its own, and an ingest whose event has not
 * arrived `--drain-seconds` after the last arrival counts as an error.
 *
 * Measured: per route its count, errors (any non-2xx, a transport error, a request still unanswered at the end of the
 * drain, a chat answer with an error message, a workflow that ended other than completed or did not end in 120 s, a
 * delivery that never came), p50/p95/p99 latency. Per process, the memory it holds: every `--gc-seconds` the script
 * asks each process in turn for a full garbage collection and reads its V8 heap in use and its RSS right after it
 * (bench/support/gc-probe.mjs, loaded with --expose-gc beside the compiled entry point; SIGUSR2). The first
 * `--warmup-minutes` of the run are warm-up; growth = median of the run's last minute / median of the first minute
 * after warm-up − 1 (windows shrink to half the measured time when that is shorter than two minutes), PASS under 10%.
 * Printed beside, not judged: every `--sample-seconds`, RSS (/proc/<pid>/status VmRSS) and heap in use
 * (`lore_process_nodejs_heap_size_used_bytes` of its /metrics) between collections, garbage included. `--series`
 * writes every sample of both kinds (with the heap V8 reserved and the external memory besides) to a JSON file.
 *
 * Exit code 1 when any target is missed: an error on any route, a missing delivery, a process that exited, growth of
 * 10% or more in any process's RSS or heap. Everything the run made is removed at the end (processes, the database
 * and its roles, the install's Kafka topics and consumer groups, its Redis keys), also after a failure or ^C.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { http, closeIdleHttpConnections } from '../../test/support/http';
import { migrate, prepareInstall, REPO_ROOT as ROOT, runProcess, type Install } from '../../test/support/install';
import { CLUSTER_ENTRY, clusterEnv, clusterPorts, clusterSecrets, opsUrl, type ClusterProcess } from '../../test/e2e/cluster';
import { median } from '../support/stats';
import { readyz, removeKafkaInstall, removeRedisKeys, startProcess, startReceiver, stopProcess, until, type Receiver, type Started } from '../../test/e2e/processes';

const { values: opts } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    'warmup-minutes': { type: 'string', default: '2' },
    rate: { type: 'string', default: '4' },
    'sample-seconds': { type: 'string', default: '5' },
    'gc-seconds': { type: 'string', default: '15' },
    'drain-seconds': { type: 'string', default: '90' },
    series: { type: 'string' },
  },
});
const MINUTES = Number(opts.minutes);
const WARMUP_MINUTES = Number(opts['warmup-minutes']);
const RATE = Number(opts.rate);
const SAMPLE_MS = Number(opts['sample-seconds']) * 1000;
const GC_MS = Number(opts['gc-seconds']) * 1000;
const DRAIN_MS = Number(opts['drain-seconds']) * 1000;
if (![MINUTES, WARMUP_MINUTES, RATE, SAMPLE_MS, GC_MS, DRAIN_MS].every((n) => Number.isFinite(n) && n >= 0) || MINUTES <= WARMUP_MINUTES || RATE <= 0 || GC_MS < 1000) {
  console.error('usage: mixed.ts [--minutes 10] [--warmup-minutes 2] [--rate 4] [--sample-seconds 5] [--gc-seconds 15] [--drain-seconds 90] (minutes > warmup-minutes, rate > 0, gc-seconds ≥ 1)');
  process.exit(2);
}
/** Growth may not reach this (10%). */
const GROWTH_LIMIT = 0.1;
/** A company search that has not ended after this long counts as an error. */
const WORKFLOW_TIMEOUT_MS = 120_000;
/** The share of the arrival rate each operation gets. */
const MIX = { ingest: 0.35, search: 0.35, chat: 0.25, workflow: 0.05 };

const run = randomBytes(4).toString('hex');
const SECRETS = clusterSecrets();
const KAFKA_PREFIX = `soak-${run}`;
const REDIS_PREFIX = `lore:gw:soak-${run}:`;
const TENANT_ID = `soak-${run}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The processes of the run (configuration.md's deployments; test/e2e/cluster.ts has their entry points and variables). */
const PROCESSES: ClusterProcess[] = ['graph', 'graph-worker', 'core', 'agents', 'agents-worker', 'webhooks', 'gateway'];

/** The directory the company searches read: prospects as a tenant would import them. */
const COMPANIES_CSV = `Company,Website,Industry,City,Country,Employees
Kestrel Pay,https://kestrelpay.example,Fintech,Berlin,Germany,120
Osprey Ledger,https://ospreyledger.example,Fintech,Berlin,Germany,45
Harbour Bank,https://harbourbank.example,Fintech,Hamburg,Germany,300
Fjord Health,https://fjordhealth.example,Healthcare,Berlin,Germany,80
Tern Analytics,https://ternanalytics.example,Software,Munich,Germany,60
`;

/** Words the notes are written from and the searches and chat questions ask about, so that both find something. */
const PLACES = ['Reykjavik', 'Bergen', 'Tromso', 'Kestrel Point', 'Osprey Bay', 'Harbour Row', 'Fjordby', 'Gull Island'];
const THINGS = ['archive', 'ferry', 'lighthouse', 'warehouse', 'weather station', 'library', 'boatyard', 'radio mast'];
const FACTS = ['opens at seven', 'is inspected every spring', 'was rebuilt in 1998', 'holds the winter stores', 'is run by volunteers', 'closes in storms'];

// ---- measurement ----------------------------------------------------------------------------------------------

interface RouteStats {
  latencies: number[];
  errors: number;
  examples: string[];
}
const routes = new Map<string, RouteStats>();
function route(name: string): RouteStats {
  let r = routes.get(name);
  if (!r) routes.set(name, (r = { latencies: [], errors: 0, examples: [] }));
  return r;
}
function fail(name: string, why: string): void {
  const r = route(name);
  r.errors += 1;
  if (r.examples.length < 5) r.examples.push(why.slice(0, 300));
}

interface Sample {
  at: number;
  rss: number | null;
  /** V8 heap in use, and (for the series file only) the heap V8 has reserved and the memory of Buffers and the like. */
  heap: number | null;
  heapTotal: number | null;
  external: number | null;
}
const samples: Record<string, Sample[]> = {};

/** What a process holds right after a full collection (bench/support/gc-probe.mjs): the judged memory. */
interface Held {
  at: number;
  heap: number;
  rss: number;
}
const held: Record<string, Held[]> = {};
/** The probe's answers each process still owes, oldest first. */
const probeWaiters = new Map<string, Array<(h: Held | null) => void>>();
/** Node flags and the probe, loaded beside each compiled entry point (the entry point itself is as deployed). */
const PROBE_ARGS = ['--expose-gc', '--import', `${ROOT}/bench/support/gc-probe.mjs`];

/** Reads the probe's `lore-gc-probe {…}` lines from a process's standard output. */
function listenForProbe(name: string, child: ChildProcess): void {
  probeWaiters.set(name, []);
  let pending = '';
  child.stdout!.on('data', (d: Buffer) => {
    pending += d.toString('utf8');
    for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 1);
      const at = line.indexOf('lore-gc-probe ');
      if (at < 0) continue;
      const m = JSON.parse(line.slice(at + 'lore-gc-probe '.length)) as { heap?: number; rss?: number; at?: number; error?: string };
      probeWaiters.get(name)!.shift()?.(m.error || m.heap === undefined || m.rss === undefined ? null : { at: m.at ?? Date.now(), heap: m.heap, rss: m.rss });
    }
    if (pending.length > 100_000) pending = pending.slice(-10_000);
  });
}

/** Asks one process for a full collection and what it holds after it; null when it does not answer in 10 s. */
function probe(name: string, pid: number): Promise<Held | null> {
  return new Promise((resolve) => {
    const waiters = probeWaiters.get(name)!;
    const answer = (h: Held | null) => {
      clearTimeout(timer);
      resolve(h);
    };
    const timer = setTimeout(() => {
      const i = waiters.indexOf(answer);
      if (i >= 0) waiters.splice(i, 1);
      resolve(null);
    }, 10_000);
    waiters.push(answer);
    try {
      process.kill(pid, 'SIGUSR2');
    } catch {
      answer(null);
    }
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** VmRSS of a process in bytes, or null once it is gone. */
function rssOf(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * The V8 heap in use, the heap reserved and the external memory from a process's /metrics (prom-client's default
 * metrics under the `lore_process_` prefix); null for what it does not export or when it does not answer.
 */
async function heapOf(metricsUrl: string): Promise<Pick<Sample, 'heap' | 'heapTotal' | 'external'>> {
  const text = await fetch(metricsUrl, { signal: AbortSignal.timeout(4000) }).then((r) => r.text()).catch(() => '');
  const read = (name: string) => {
    const m = new RegExp(`^lore_process_${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  };
  return { heap: read('nodejs_heap_size_used_bytes'), heapTotal: read('nodejs_heap_size_total_bytes'), external: read('nodejs_external_memory_bytes') };
}

// ---- the run --------------------------------------------------------------------------------------------------

const procs: Record<string, Started> = {};
const ops: Record<string, string> = {};
const threads: string[] = [];
let install: Install | undefined;
let receiver: Receiver | undefined;
let cleaned = false;

async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  const step = (what: string, fn: () => Promise<unknown>) => fn().catch((err: unknown) => console.error(`cleanup: ${what}: ${String(err)}`));
  closeIdleHttpConnections();
  await Promise.all(Object.values(procs).map((p) => step('stopping a process', () => stopProcess(p))));
  if (receiver) await step('the receiver', () => receiver!.close());
  await step('Kafka topics and groups', () => removeKafkaInstall(KAFKA_PREFIX, `soak-cleanup-${run}`));
  await step('Redis keys', () => removeRedisKeys(REDIS_PREFIX));
  await step('workflow streams', () => removeRedisKeys(threads.map((t) => `workflow:${t}`)));
  if (install) await step('the database', () => install!.drop());
}

process.on('SIGINT', () => {
  console.error('interrupted: cleaning up');
  void cleanup().finally(() => process.exit(130));
});

async function main(): Promise<number> {
  const startedAt = new Date();
  const loadBefore = loadavg();
  install = await prepareInstall('soak');
  const m = await migrate(install);
  if (m.code !== 0) throw new Error(`migrations failed:\n${m.output}`);

  const ports = await clusterPorts();
  const gatewayUrl = `http://127.0.0.1:${ports.gatewayPublic}`;
  for (const name of PROCESSES) ops[name] = opsUrl(ports, name);
  // configuration.md's tables, one per process: the shared table the cluster-install and faults suites start from.
  const env = clusterEnv({ databaseUrl: install.appUrl, secrets: SECRETS, kafkaPrefix: KAFKA_PREFIX, redisPrefix: REDIS_PREFIX, ports, processes: PROCESSES });
  const setupStart = Date.now();
  for (const name of PROCESSES) {
    procs[name] = startProcess(process.execPath, [...PROBE_ARGS, CLUSTER_ENTRY[name]], { cwd: ROOT, env: env[name]! });
    listenForProbe(name, procs[name].child);
  }
  await Promise.all(PROCESSES.map((name) => until(`${name} /readyz`, async () => ((await readyz(ops[name]!)).status === 200 ? true : undefined), 180_000, procs[name])));
  // The agents worker is ready once it is in its consumer groups; the gateway once it has seen its upstreams ready.
  await until('agents-worker to join its consumer groups', async () => {
    const r = await readyz(ops['agents-worker']!);
    return r.body?.checks?.['consumer groups']?.groups?.some((g: { state: string }) => g.state === 'member') ? true : undefined;
  }, 120_000, procs['agents-worker']);
  await until('the gateway to see its upstreams ready', async () => ((await readyz(ops.gateway!)).body?.checks?.upstreams?.degraded === false ? true : undefined), 60_000, procs.gateway);

  const cli = await runProcess('services/gateway/dist/cli.js', { LORE_ADMIN_URL: `http://127.0.0.1:${ports.gatewayAdmin}`, LORE_ADMIN_TOKEN: SECRETS.adminToken }, {
    args: ['create-tenant', '--name', 'Soak', '--tenant-id', TENANT_ID, '--admin-email', `ops@${TENANT_ID}.example`],
  });
  if (cli.code !== 0) throw new Error(`create-tenant failed:\n${cli.output}`);
  const key: string = JSON.parse(cli.stdout).api_key;
  const asKey = { 'x-api-key': key };
  const bearer = { authorization: `Bearer ${key}` };

  receiver = await startReceiver();
  const hook = await http(gatewayUrl, 'POST', '/api/v1/webhooks', { headers: asKey, body: { url: receiver.url, events: ['memory.ingest.completed'] } });
  if (hook.status !== 201) throw new Error(`webhook subscription: ${hook.status} ${hook.text}`);

  // The workflows' directory: docs/agents.md's CSV import (upload, review, import to completed).
  const form = new FormData();
  form.append('file', new Blob([COMPANIES_CSV], { type: 'text/csv' }), 'prospects.csv');
  const uploaded = await fetch(`${gatewayUrl}/api/lists/csv/upload`, { method: 'POST', headers: bearer, body: form });
  const events = (await uploaded.text()).split('\n\n').map((c) => c.trim()).filter((c) => c.startsWith('data: ')).map((c) => JSON.parse(c.slice('data: '.length)));
  if (uploaded.status !== 200 || events[events.length - 1]?.status !== 'ready_for_review') throw new Error(`CSV upload: ${uploaded.status} ${JSON.stringify(events)}`);
  const importThread: string = events[0].thread_id;
  threads.push(importThread);
  const reviewed = await http(gatewayUrl, 'POST', `/api/lists/csv/review/${importThread}`, { headers: bearer, body: { listName: 'Prospects' } });
  if (reviewed.status !== 200) throw new Error(`CSV review: ${reviewed.status} ${reviewed.text}`);
  await until('the CSV import to complete', async () => {
    const r = await http(gatewayUrl, 'GET', `/api/lists/csv/status/${importThread}`, { headers: bearer });
    if (r.json?.status === 'error') throw new Error(`the import failed: ${r.text}`);
    return r.json?.status === 'completed' ? true : undefined;
  }, 120_000, procs.agents);

  const session = await http(gatewayUrl, 'POST', '/api/chat/create-chat-session', { headers: asKey, body: { persona_id: 0 } });
  if (session.status !== 200) throw new Error(`create-chat-session: ${session.status} ${session.text}`);
  const chatSession: string = session.json.chat_session_id;
  const setupSeconds = (Date.now() - setupStart) / 1000;

  // Where each process's /metrics is (the gateway's and the webhooks worker's on their operations ports).
  const pids: Record<string, number> = {};
  for (const [name, p] of Object.entries(procs)) {
    pids[name] = p.child.pid!;
    samples[name] = [];
    held[name] = [];
  }
  const noHeap = (await Promise.all(Object.keys(procs).map(async (name) => ((await heapOf(`${ops[name]}/metrics`)).heap === null ? name : undefined)))).filter(Boolean);

  // ---- load ----
  const accepted = new Map<string, number>(); // doc id → accepted at
  const delivered = new Map<string, number>(); // doc id → received at
  let duplicates = 0;
  let seen = 0;
  const watchDeliveries = setInterval(() => {
    const now = Date.now();
    for (; seen < receiver!.received.length; seen += 1) {
      try {
        const envelope = JSON.parse(receiver!.received[seen]!.body.toString('utf8'));
        const doc = envelope.payload?.doc_id as string | undefined;
        if (envelope.event !== 'memory.ingest.completed' || !doc) continue;
        if (delivered.has(doc)) duplicates += 1;
        else delivered.set(doc, now);
      } catch {
        // not an event of this run's shape; the deliveries check below finds what is missing
      }
    }
  }, 100);

  const inFlight = new Set<Promise<void>>();
  let maxInFlight = 0;
  const t0 = Date.now();
  const endAt = t0 + MINUTES * 60_000;
  const warmEnd = t0 + WARMUP_MINUTES * 60_000;
  let stopping = false;
  let seq = 0;
  const pick = <T>(list: readonly T[], n: number) => list[n % list.length]!;

  /** One timed request; a non-2xx, a transport error, or a `check` that returns a reason counts as an error. */
  async function timed(name: string, fn: () => Promise<{ status: number; text: string; json: any }>, check?: (json: any) => string | undefined): Promise<any> {
    const start = performance.now();
    try {
      const r = await fn();
      const ms = performance.now() - start;
      if (r.status < 200 || r.status > 299) {
        fail(name, `${r.status} ${r.text}`);
        return undefined;
      }
      const why = check?.(r.json);
      if (why) {
        fail(name, why);
        return undefined;
      }
      route(name).latencies.push(ms);
      return r.json;
    } catch (err) {
      fail(name, `transport: ${String(err)}`);
      return undefined;
    }
  }

  const operations: Record<keyof typeof MIX, () => Promise<void>> = {
    ingest: async () => {
      const n = (seq += 1);
      const content = `Note ${run}-${n}. The ${pick(THINGS, n)} at ${pick(PLACES, n * 7)} ${pick(FACTS, n * 3)}. Logged by the harbour office as entry ${n}.`;
      const json = await timed('POST /api/v1/memory/ingest', () => http(gatewayUrl, 'POST', '/api/v1/memory/ingest', { headers: asKey, body: { content, content_type: 'text', routing: { mode: 'auto' } } }), (j) =>
        typeof j?.doc_id === 'string' ? undefined : `no doc_id: ${JSON.stringify(j)}`,
      );
      if (json) accepted.set(json.doc_id, Date.now());
    },
    search: async () => {
      const n = (seq += 1);
      await timed('POST /api/v1/memory/search', () => http(gatewayUrl, 'POST', '/api/v1/memory/search', { headers: asKey, body: { query: `When does the ${pick(THINGS, n)} at ${pick(PLACES, n * 5)} open?` } }));
    },
    chat: async () => {
      const n = (seq += 1);
      await timed(
        'POST /api/chat/send-chat-message',
        () => http(gatewayUrl, 'POST', '/api/chat/send-chat-message', { headers: asKey, body: { chat_session_id: chatSession, message: `What do we know about the ${pick(THINGS, n)} at ${pick(PLACES, n * 3)}?`, stream: false } }),
        (j) => (j?.error_msg ? `error_msg: ${j.error_msg}` : typeof j?.answer === 'string' ? undefined : `no answer: ${JSON.stringify(j).slice(0, 200)}`),
      );
    },
    workflow: async () => {
      const n = (seq += 1);
      const started = Date.now();
      const json = await timed('POST /company-search/start', () => http(gatewayUrl, 'POST', '/company-search/start', { headers: bearer, body: { prompt: 'Find fintech companies in Berlin', list_name: `Berlin fintech ${n}` } }), (j) =>
        j?.success === true && typeof j.thread_id === 'string' ? undefined : `not started: ${JSON.stringify(j)}`,
      );
      if (!json) return;
      threads.push(json.thread_id);
      for (;;) {
        await sleep(1000);
        const status = await timed('GET /company-search/status/{id}', () => http(gatewayUrl, 'GET', `/company-search/status/${json.thread_id}`, { headers: bearer }));
        if (status && ['completed', 'stopped', 'error'].includes(status.status)) {
          if (status.status === 'completed' && status.table_structure?.current_count > 0) route('company search (start → completed)').latencies.push(Date.now() - started);
          else fail('company search (start → completed)', `ended ${status.status} with ${status.table_structure?.current_count} rows: ${status.error_message ?? ''}`);
          return;
        }
        if (Date.now() - started > WORKFLOW_TIMEOUT_MS) {
          fail('company search (start → completed)', `not ended after ${WORKFLOW_TIMEOUT_MS / 1000} s (last: ${status?.status})`);
          return;
        }
      }
    },
  };

  /** Arrivals of one operation at fixed times (t0 + offset + k × interval), independent of the answers. */
  function arrivals(name: keyof typeof MIX, offsetMs: number): void {
    const interval = 1000 / (RATE * MIX[name]);
    let k = 0;
    const tick = () => {
      if (stopping || Date.now() >= endAt) return;
      const p = operations[name]().catch((err: unknown) => fail(name, `bench: ${String(err)}`));
      inFlight.add(p);
      maxInFlight = Math.max(maxInFlight, inFlight.size);
      void p.finally(() => inFlight.delete(p));
      k += 1;
      setTimeout(tick, Math.max(0, t0 + offsetMs + k * interval - Date.now()));
    };
    setTimeout(tick, offsetMs);
  }
  (Object.keys(MIX) as Array<keyof typeof MIX>).forEach((name, i) => arrivals(name, i * 97));

  let lastMinute = -1;
  /** Where each route's latencies of the minute being logged begin. */
  const minuteStart = new Map<string, number>();
  const sampler = async () => {
    for (;;) {
      const at = Date.now();
      if (at > endAt) return;
      await Promise.all(Object.keys(procs).map(async (name) => samples[name]!.push({ at, rss: rssOf(pids[name]!), ...(await heapOf(`${ops[name]}/metrics`)) })));
      const minute = Math.floor((at - t0) / 60_000);
      if (minute !== lastMinute) {
        lastMinute = minute;
        const done = [...routes.values()].reduce((s, r) => s + r.latencies.length, 0);
        const errors = [...routes.values()].reduce((s, r) => s + r.errors, 0);
        // The minute that just ended, per route: its p95 (a trend the whole-run figures would hide).
        const p95s = [...routes.entries()].map(([name, r]) => {
          const slice = r.latencies.slice(minuteStart.get(name) ?? 0).sort((a, b) => a - b);
          minuteStart.set(name, r.latencies.length);
          return `${name.split(' ').slice(0, 2).join(' ')} ${slice.length > 0 ? percentile(slice, 95).toFixed(0) : '–'}`;
        });
        console.error(`[soak] minute ${minute}: ${done} answers, ${errors} errors, ${inFlight.size} in flight, ${delivered.size}/${accepted.size} delivered, load ${loadavg()[0]!.toFixed(2)}`);
        if (minute > 0) console.error(`[soak]   p95 ms of minute ${minute - 1}: ${p95s.join(', ')}`);
      }
      await sleep(Math.max(0, at + SAMPLE_MS - Date.now()));
    }
  };
  // The judged memory: every GC_MS, each process in turn is collected and read (one at a time, so that only one
  // process pauses for its collection at any moment).
  const collector = async () => {
    while (Date.now() <= endAt) {
      const round = Date.now();
      for (const name of Object.keys(procs)) {
        if (!procs[name]!.alive()) continue;
        const h = await probe(name, pids[name]!);
        if (h) held[name]!.push(h);
        else console.error(`[soak] ${name} did not answer the collection probe`);
      }
      await sleep(Math.max(0, round + GC_MS - Date.now()));
    }
  };
  await Promise.all([sampler(), collector()]);
  stopping = true;

  // Drain: the answers still owed, then the deliveries of every accepted ingest.
  const drainUntil = Date.now() + DRAIN_MS;
  while (inFlight.size > 0 && Date.now() < drainUntil) await sleep(200);
  const unanswered = inFlight.size;
  if (unanswered > 0) fail('(any)', `${unanswered} requests unanswered ${DRAIN_MS / 1000} s after the last arrival`);
  while ([...accepted.keys()].some((d) => !delivered.has(d)) && Date.now() < drainUntil) await sleep(200);
  clearInterval(watchDeliveries);
  const deliveryRoute = 'memory.ingest.completed delivery (accepted → received)';
  route(deliveryRoute);
  for (const [doc, at] of accepted) {
    const got = delivered.get(doc);
    if (got === undefined) fail(deliveryRoute, `no delivery for ${doc}`);
    else route(deliveryRoute).latencies.push(got - at);
  }
  const loadAfter = loadavg();
  const dead = Object.keys(procs).filter((name) => !procs[name]!.alive());

  // ---- report ----
  const fmt = (ms: number) => (Number.isNaN(ms) ? '–' : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
  const measuredMs = endAt - warmEnd;
  const window = Math.min(60_000, measuredMs / 2);
  const lines: string[] = [];
  lines.push(`Lore soak ${startedAt.toISOString()} (run ${run}): ${MINUTES} min at ${RATE}/s (${WARMUP_MINUTES} min warm-up), setup ${setupSeconds.toFixed(0)} s`);
  lines.push(`load average before ${loadBefore.map((l) => l.toFixed(2)).join(' ')}, after ${loadAfter.map((l) => l.toFixed(2)).join(' ')}; most requests in flight ${maxInFlight}`);
  lines.push('');
  lines.push('| route | count | errors | p50 | p95 | p99 |');
  lines.push('|---|---:|---:|---:|---:|---:|');
  let errorTotal = 0;
  for (const [name, r] of routes) {
    const sorted = [...r.latencies].sort((a, b) => a - b);
    errorTotal += r.errors;
    lines.push(`| ${name} | ${r.latencies.length + r.errors} | ${r.errors} | ${fmt(percentile(sorted, 50))} | ${fmt(percentile(sorted, 95))} | ${fmt(percentile(sorted, 99))} |`);
  }
  lines.push('');
  lines.push(`webhook deliveries: ${delivered.size} distinct of ${accepted.size} accepted ingests, ${duplicates} repeated`);
  lines.push('');
  const mb = (b: number) => `${(b / 1048576).toFixed(1)} MB`;
  /** Growth of one field of a series: median of the last window over the median of the first window after warm-up. */
  const growthCells = <S extends { at: number }>(series: S[], value: (x: S) => number | null): { cells: string[]; growth: number | null } => {
    const pickWindow = (from: number, to: number) => series.filter((x) => x.at >= from && x.at < to && value(x) !== null).map((x) => value(x)!);
    const first = pickWindow(warmEnd, warmEnd + window);
    const last = pickWindow(endAt - window, Infinity);
    if (first.length === 0 || last.length === 0) return { cells: ['–', '–', 'no samples'], growth: null };
    const a = median(first);
    const b = median(last);
    return { cells: [mb(a), mb(b), `${((b / a - 1) * 100).toFixed(1)}%`], growth: b / a - 1 };
  };
  lines.push(`judged: what each process holds right after a full collection (every ${GC_MS / 1000} s); growth = median of the last ${(window / 1000).toFixed(0)} s over the median of the first ${(window / 1000).toFixed(0)} s after warm-up, limit ${GROWTH_LIMIT * 100}%`);
  lines.push('');
  lines.push('| process | RSS first | RSS last | RSS growth | heap first | heap last | heap growth | collections |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  let growthFailed = false;
  for (const name of Object.keys(procs)) {
    const cells: string[] = [];
    for (const field of ['rss', 'heap'] as const) {
      const { cells: c, growth } = growthCells(held[name]!, (x) => x[field]);
      const pass = growth !== null && growth < GROWTH_LIMIT;
      if (!pass) growthFailed = true;
      cells.push(c[0]!, c[1]!, `${c[2]} ${pass ? 'PASS' : 'FAIL'}`);
    }
    lines.push(`| ${name} | ${cells.join(' | ')} | ${held[name]!.length} |`);
  }
  // Not judged: between collections the heap in use carries the garbage of the load, and V8 grows and shrinks the
  // heap it reserves (and with it the RSS) over minutes, so these medians swing with the collector's phase.
  lines.push('');
  lines.push(`not judged: the same growth between collections (RSS and /metrics heap in use every ${SAMPLE_MS / 1000} s, garbage included)`);
  lines.push('');
  lines.push('| process | RSS first | RSS last | RSS growth | heap first | heap last | heap growth |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|');
  for (const name of Object.keys(procs)) {
    const rss = growthCells(samples[name]!, (x) => x.rss).cells;
    const heap = noHeap.includes(name) ? ['–', '–', 'no heap metric'] : growthCells(samples[name]!, (x) => x.heap).cells;
    lines.push(`| ${name} | ${[...rss, ...heap].join(' | ')} |`);
  }
  if (dead.length > 0) lines.push('', `processes that exited: ${dead.map((n) => `${n} (${procs[n]!.child.exitCode ?? procs[n]!.child.signalCode})`).join(', ')}`);
  const examples = [...routes.entries()].filter(([, r]) => r.examples.length > 0);
  if (examples.length > 0) {
    lines.push('', 'first errors:');
    for (const [name, r] of examples) for (const e of r.examples) lines.push(`- ${name}: ${e}`);
  }
  const passed = errorTotal === 0 && !growthFailed && dead.length === 0;
  lines.push('', `verdict: ${passed ? 'PASS' : 'FAIL'} (errors ${errorTotal}, growth ${growthFailed ? 'over the limit or unmeasured' : 'under the limit'}, processes exited ${dead.length})`);
  console.log(lines.join('\n'));
  if (opts.series) writeFileSync(opts.series, JSON.stringify({ started: startedAt.toISOString(), t0, warmEnd, endAt, samples, held }));
  for (const name of dead) console.error(`--- ${name} output ---\n${procs[name]!.output().slice(-4000)}`);
  return passed ? 0 : 1;
}

main()
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  })
  .catch(async (err: unknown) => {
    console.error(err);
    await cleanup();
    process.exit(1);
  });
