/**
 * The runtime kit's Koa app (request id, access log written as in production but to /dev/null, RED metrics, error
 * middleware, router) against a bare `node:http` handler (plain Koa with the same route is measured too, as a reference for the framework's own
 * cost), in the same run, at the same concurrency, on loopback. Each server runs in its own child
 * process so the load generator (autocannon, in this process) does not share its event loop; rounds alternate so
 * drift hits all alike, and each round starts fresh server processes. Prints req/s, p50/p99 and server CPU per
 * request of each, and PASS/FAIL of the kit's throughput against plain Koa's (the target); the ratio to node:http
 * is printed as information.
 *
 *   npx tsx bench/kit-vs-http.ts            (or npm run bench:kit)
 *   BENCH_SECONDS=10 BENCH_CONNECTIONS=64 BENCH_ROUNDS=3 npx tsx bench/kit-vs-http.ts
 *   BENCH_PRIORITY=10      the servers and the load generator run at nice -10 (a machine shared with other work)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import Koa from 'koa';
import Router from '@koa/router';
import { createHttpApp, type LoreState } from '../services/runtime/src/http/app';
import { listen } from '../services/runtime/src/http/server';
import { createLogger } from '../services/runtime/src/log/logger';
import { fileLogDestination } from '../services/runtime/src/log/destination';
import { createMetricsRegistry } from '../services/runtime/src/metrics/registry';

/** The kit's throughput as a share of plain Koa with the same route (the framework it is built on). */
const TARGET_RATIO = 0.9;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PRIORITY = Number(process.env.BENCH_PRIORITY ?? 0);
const BODY = JSON.stringify({ status: 'ok', service: 'bench' });

/** bare node:http (the baseline), plain Koa with the same router (reference: the framework's own cost), the kit. */
type Kind = 'bare' | 'koa' | 'kit';

async function serve(kind: Kind): Promise<number> {
  if (kind === 'bare') {
    const server = createServer((req, res) => {
      res.statusCode = 200;
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end(BODY);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }
  if (kind === 'koa') {
    const app = new Koa();
    const router = new Router();
    router.get('/api/v1/pages/ping', (ctx) => {
      ctx.body = { status: 'ok', service: 'bench' };
    });
    app.use(router.routes());
    const started = await listen(app, 0, '127.0.0.1');
    return started.port;
  }
  // Every line is formatted and written as in production (batched per event-loop turn, written synchronously),
  // to /dev/null: the cost of logging without the cost of a disk.
  const logger = createLogger({ level: 'info', service: 'bench', destination: fileLogDestination('/dev/null') });
  const metrics = createMetricsRegistry('bench');
  const app = createHttpApp({ service: 'bench', logger, metrics });
  const router = new Router<LoreState>();
  router.get('/api/v1/pages/ping', (ctx) => {
    ctx.body = { status: 'ok', service: 'bench' };
  });
  app.use(router.routes());
  const started = await listen(app, 0, '127.0.0.1');
  return started.port;
}

interface Measure {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Server CPU time per request (user + system): independent of what else loads the machine. */
  cpuUs: number;
}

interface Server {
  child: ChildProcess;
  port: number;
}

/** The server's own CPU time so far, in microseconds (asked over IPC). */
function cpuOf(server: Server): Promise<number> {
  return new Promise((resolve) => {
    server.child.once('message', (m: { cpu: number }) => resolve(m.cpu));
    server.child.send('cpu');
  });
}

async function measure(server: Server, seconds: number): Promise<Measure> {
  const cpuBefore = await cpuOf(server);
  const r = await autocannon({
    url: `http://127.0.0.1:${server.port}/api/v1/pages/ping`,
    connections: CONNECTIONS,
    duration: seconds,
    pipelining: 1,
  });
  const cpuUs = (await cpuOf(server)) - cpuBefore;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts + r.non2xx,
    cpuUs: cpuUs / Math.max(1, r.requests.total),
  };
}

function start(kind: Kind): Promise<Server> {
  // The child inherits this process's execArgv, so it runs through tsx too.
  const child = fork(__filename, ['--serve', kind], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  if (PRIORITY > 0 && child.pid !== undefined) setPriority(child.pid, -PRIORITY);
  return new Promise((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve({ child, port: m.port }));
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const fmt = (n: number, digits = 0) => n.toFixed(digits).padStart(10);

async function main(): Promise<void> {
  if (PRIORITY > 0) setPriority(-PRIORITY);
  const results: Record<Kind, Measure[]> = { bare: [], koa: [], kit: [] };
  console.log(`kit vs plain Koa (and node:http) — ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS}s each, loopback`);
  // Every round starts its three servers afresh: one process's luck (where its JIT settles, how its heap grows)
  // would otherwise decide all rounds of that server, and two runs of the same code differed by 20 % that way.
  for (let round = 0; round < ROUNDS; round++) {
    const servers = { bare: await start('bare'), koa: await start('koa'), kit: await start('kit') };
    try {
      for (const kind of ['bare', 'koa', 'kit'] as const) await measure(servers[kind], 1); // JIT warm-up
      for (const kind of ['bare', 'koa', 'kit'] as const) results[kind].push(await measure(servers[kind], SECONDS));
    } finally {
      for (const server of Object.values(servers)) server.child.kill();
    }
  }
  const summary = (kind: Kind) => ({
    rps: mean(results[kind].map((m) => m.rps)),
    p50: mean(results[kind].map((m) => m.p50)),
    p99: mean(results[kind].map((m) => m.p99)),
    errors: results[kind].reduce((s, m) => s + m.errors, 0),
    cpuUs: mean(results[kind].map((m) => m.cpuUs)),
  });
  const bare = summary('bare');
  const koa = summary('koa');
  const kit = summary('kit');
  // The verdict takes the median of the rounds' ratios: each round measures Koa and the kit seconds apart, and a
  // shared machine's bursts of other work land in single rounds.
  const rounds = results.kit.map((m, i) => m.rps / results.koa[i]!.rps);
  const ratio = [...rounds].sort((a, b) => a - b)[Math.floor(rounds.length / 2)]!;
  console.log(`${'server'.padEnd(10)}${'req/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'cpu µs/req'.padStart(12)}${'errors'.padStart(8)}`);
  for (const [label, m] of [['node:http', bare], ['koa', koa], ['kit', kit]] as const) {
    console.log(`${label.padEnd(10)}${fmt(m.rps)}${fmt(m.p50, 2)}${fmt(m.p99, 2)}${fmt(m.cpuUs, 1).padStart(12)}${String(m.errors).padStart(8)}`);
  }
  console.log(`server CPU per request kit/node:http = ${(kit.cpuUs / bare.cpuUs).toFixed(2)}x, koa/node:http = ${(koa.cpuUs / bare.cpuUs).toFixed(2)}x`);
  console.log(`information: plain Koa keeps ${(koa.rps / bare.rps).toFixed(3)} of node:http, the kit ${(kit.rps / bare.rps).toFixed(3)}`);
  console.log(`kit/Koa per round: ${rounds.map((r) => r.toFixed(3)).join(', ')} (mean req/s ratio ${(kit.rps / koa.rps).toFixed(3)}); server CPU per request kit/Koa = ${(kit.cpuUs / koa.cpuUs).toFixed(2)}x`);
  const pass = ratio >= TARGET_RATIO && bare.errors === 0 && koa.errors === 0 && kit.errors === 0;
  console.log(`throughput ratio kit/plain Koa = ${ratio.toFixed(3)}, median of the rounds (target >= ${TARGET_RATIO}): ${pass ? 'PASS' : 'FAIL'}`);
  process.exitCode = pass ? 0 : 1;
}

const serveIndex = process.argv.indexOf('--serve');
if (serveIndex >= 0) {
  serve(process.argv[serveIndex + 1] as Kind).then(
    (port) => {
      process.on('message', () => {
        const { user, system } = process.cpuUsage();
        process.send?.({ cpu: user + system });
      });
      process.send?.({ port });
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
