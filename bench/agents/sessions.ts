/**
 * Session sockets benchmark (issue 14): `--sessions` (200) agentic crawler sessions' sockets at once in one process —
 * the gateway and the agents API of the integration suites' stack (test/agents/harness.ts; real PostgreSQL, Redis and
 * Kafka) — against sessions run one at a time in the same script. The sessions run in an agents worker child process
 * (`services/agents/src/worker-main.ts`, `LORE_AGENTS_WORKFLOW_MAX_RUNNING` the session count), crawling the loopback
 * test world, as the agents-worker deployment runs them. Printed as ratios, load over idle:
 *
 * - message lag, p95 — target <= 2x the idle run's: from the event's time in the session's log (the message's `at`,
 *   the writing transaction's time in PostgreSQL, on this machine's clock) to the client holding the message, through
 *   the gateway's spliced socket. Every message of a session is counted (each session's socket is open before its
 *   first event: connecting starts it).
 * - memory per session: this process's V8 heap (the sockets, the gateway's splices, the API's followers) after a
 *   full collection with every session's socket open, less the same figure before, divided by the sessions; a
 *   separate round after the measured ones, as the collections pause the process.
 *
 *   bash test/infra/up.sh && npm run bench:sessions [-- --sessions 200 --idle-runs 10 --rounds 2]
 *
 * Each session crawls one company site of the world (home, about, team page, profiles: about ten pages) from the URL
 * in its prompt; no web search, no language model. `--rounds` rounds of idle then load are pooled (each round's
 * ratio printed too). `--profile-worker DIR` runs the worker child under V8's CPU profiler (written to DIR when it
 * exits; the profiler slows the worker, so such a run's figures are not comparable). Prints p50/p95 of each phase, the ratio and a verdict; exits 1 only on a crash.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { loadavg, cpus } from 'node:os';
import WebSocket from 'ws';
import { RedisProgressStreams } from '@lore/runtime';
import { startAgentsStack, type AgentsStack } from '../../test/agents/harness';
import { IDENTITY_SECRET, type TenantFixture } from '../../test/gateway/harness';
import { generateAgentsWorld, serveAgentsWorld, type ServedAgentsWorld } from '../../test/support/agents-world';
import { requireEnv, uniqueSuffix } from '../../test/support/infra';

/** The progress streams' key prefix, the same for this script's API and the worker child. */
const STREAMS_PREFIX = `bench-agents-${process.pid}:`;

const argNum = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const SESSIONS = argNum('sessions', 200);
const IDLE_RUNS = argNum('idle-runs', 10);
const ROUNDS = argNum('rounds', 2);
const TARGET = 2;
/** `--profile-worker DIR`: the worker child under V8's CPU profiler, its profile written to DIR when it exits. */
const PROFILE_WORKER = process.argv.includes('--profile-worker') ? process.argv[process.argv.indexOf('--profile-worker') + 1] : undefined;
const ROOT = join(__dirname, '..', '..');

const out = (line: string) => process.stdout.write(`${line}\n`);
const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const gc = (globalThis as { gc?: () => void }).gc;

interface Run {
  lags: number[];
  messages: number;
  rows: number;
}

/** Opens the session's socket (which starts it) and collects each message's lag until `done`. */
function follow(url: string, onOpen?: () => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const run: Run = { lags: [], messages: 0, rows: 0 };
    ws.on('open', () => onOpen?.());
    ws.on('message', (data) => {
      const now = Date.now();
      const m = JSON.parse(data.toString()) as { type: string; at: string; cursor: number | null };
      run.messages++;
      if (m.cursor !== null) run.lags.push(now - Date.parse(m.at));
      if (m.type === 'row') run.rows++;
      if (m.type === 'error' && m.cursor !== null) reject(new Error(`a session failed: ${data.toString()}`));
      if (m.type === 'done') ws.close();
    });
    ws.on('close', () => resolve(run));
    ws.on('unexpected-response', (_q, res) => reject(new Error(`socket refused: ${res.statusCode}`)));
    ws.on('error', reject);
  });
}

async function main(): Promise<void> {
  const world = generateAgentsWorld(21, { companies: Math.max(20, Math.min(SESSIONS, 200)) });
  const sites = world.companies.filter((c) => !c.teamDisallowed);
  const served: ServedAgentsWorld = await serveAgentsWorld(world);
  const redisUrl = requireEnv('LORE_TEST_REDIS_URL');
  // Streams without a key prefix: the API and the worker child write and read the same keys, as in a cluster.
  const stack: AgentsStack = await startAgentsStack({
    checkResponses: false,
    service: { streams: new RedisProgressStreams(redisUrl, { keyPrefix: STREAMS_PREFIX }), socketLimits: { socketsPerTenant: SESSIONS * 2 } },
  });
  const logs: string[] = [];
  const child: ChildProcess = spawn(process.execPath, [...(PROFILE_WORKER ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_WORKER}`] : []), '--conditions=lore-src', '--import', 'tsx', join(ROOT, 'services/agents/src/worker-main.ts')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      LORE_LOG_LEVEL: 'warn',
      LORE_DATABASE_URL: stack.database.url,
      LORE_IDENTITY_SECRET: IDENTITY_SECRET,
      LORE_REDIS_URL: redisUrl,
      LORE_AGENTS_REDIS_PREFIX: STREAMS_PREFIX,
      LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
      LORE_KAFKA_PREFIX: stack.kafkaPrefix,
      LORE_AGENTS_CONSUMER_GROUP: `agents-worker-bench-${uniqueSuffix()}`,
      LORE_AGENTS_WORKER_PORT: '0',
      LORE_AGENTS_HOST: '127.0.0.1',
      LORE_AGENTS_RELAY: 'true',
      LORE_AGENTS_ALLOW_LOOPBACK: 'true',
      // One more than the sessions: a worker keeps one slot for another tenant (docs/agents.md, "The worker").
      LORE_AGENTS_WORKFLOW_MAX_RUNNING: String(Math.min(256, SESSIONS + 1)),
      LORE_AGENTS_DB_POOL_MAX: '20',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => logs.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => logs.push(d.toString()));
  child.once('exit', (code) => {
    if (code !== null && code !== 0) process.stderr.write(`the worker exited ${code}: ${logs.join('').slice(-4000)}\n`);
  });
  const tenant: TenantFixture = await stack.tenant();
  let next = 0;
  const start = async (): Promise<string> => {
    const c = sites[next++ % sites.length]!;
    const r = await stack.call('POST', '/agentic-crawler/start', { authorization: `Bearer ${tenant.key}` }, { prompt: `Find the people at ${served.companyUrl(c)}` });
    if (r.status !== 200) throw new Error(`start failed: ${r.status} ${r.text}`);
    return (r.json.websocket_url as string).replace('<your-api-key>', encodeURIComponent(tenant.key));
  };
  const idle = async (): Promise<Run[]> => {
    const runs: Run[] = [];
    for (let i = 0; i < IDLE_RUNS; i++) runs.push(await follow(await start()));
    return runs;
  };
  const load = async (measure?: () => Promise<void>): Promise<Run[]> => {
    const urls = await Promise.all(Array.from({ length: SESSIONS }, () => start()));
    let opened = 0;
    let allOpen: () => void = () => undefined;
    const open = new Promise<void>((r) => (allOpen = r));
    const runs = Promise.all(urls.map((u) => follow(u, () => ++opened === SESSIONS && allOpen())));
    await open;
    await measure?.();
    return runs;
  };
  try {
    out(`session sockets: ${SESSIONS} crawler sessions at once vs ${IDLE_RUNS} one at a time, ${ROUNDS} round(s); ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(2)}`);
    // A warm-up session: connections, prepared statements, the world's first pages.
    await follow(await start());
    const idleLags: number[] = [];
    const loadLags: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const i = (await idle()).flatMap((r) => r.lags);
      const t0 = Date.now();
      const l = await load();
      const secs = (Date.now() - t0) / 1000;
      const ll = l.flatMap((r) => r.lags);
      idleLags.push(...i);
      loadLags.push(...ll);
      out(
        `round ${round}: idle p95 ${pct(i, 95)} ms (${i.length} messages); load p95 ${pct(ll, 95)} ms (${ll.length} messages, ${l.reduce((n, r) => n + r.rows, 0)} rows, ${secs.toFixed(1)} s); ratio ${(pct(ll, 95) / Math.max(1, pct(i, 95))).toFixed(2)}x; load ${loadavg()[0]!.toFixed(2)}`,
      );
    }
    const ratio = pct(loadLags, 95) / Math.max(1, pct(idleLags, 95));
    out(`message lag  idle p50 ${pct(idleLags, 50)} ms p95 ${pct(idleLags, 95)} ms | load p50 ${pct(loadLags, 50)} ms p95 ${pct(loadLags, 95)} ms | p95 ratio ${ratio.toFixed(2)}x (target <= ${TARGET}x): ${ratio <= TARGET ? 'met' : 'MISSED'}`);
    if (gc) {
      gc();
      const before = process.memoryUsage().heapUsed;
      let during = before;
      await load(async () => {
        gc();
        during = process.memoryUsage().heapUsed;
      });
      out(`memory per session: ${((during - before) / SESSIONS / 1024).toFixed(1)} KiB of V8 heap (after a full collection, every socket open; ${SESSIONS} sessions)`);
    } else out('memory per session: not measured (run with node --expose-gc)');
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    await stack.close();
    await served.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
