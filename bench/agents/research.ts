/**
 * Deep research benchmark (issue 14): the same research run twice on the agents test world — five researchers at
 * once (`max_concurrent_research_units` 5, 3 iterations each, spec 3's defaults) and forced sequential (one
 * researcher at a time, the same five areas and iterations) — each on a fresh stack, so neither inherits the other's
 * robots.txt cache. Prints both wall times (from the run's `started` event to its `completed` event, as the event log
 * records them) and their ratio (target >= 3x), and the share of the reports' sentences that cite a fetched page
 * which supports them, as the citation checker judges it (target 100%). A missed target is printed, not an error:
 * the script exits non-zero only when something crashes.
 *
 *   bash test/infra/up.sh && npm run bench:research [-- --latency 150 --runs 2]
 *
 * The stack is the integration suites' (test/agents/harness.ts): gateway and agents in this process, the agents
 * worker on real Kafka, PostgreSQL and Redis, no language model (the brief and the report are Lore's own, as with
 * the embedded default). The world is `generateAgentsWorld(1)` on the loopback web with its SearXNG-format endpoint;
 * every answer of the web waits `--latency` ms first (default 150: a remote site's round trip), since on loopback a
 * page costs nothing and there would be nothing to overlap.
 */
import { ownReportLines, readResearchState, reportClaims, supports, type ResearchSource } from '../../services/agents/src/domain/research';
import { startAgentsStack, type AgentsStack } from '../../test/agents/harness';
import { generateAgentsWorld, serveAgentsWorld, type ServedAgentsWorld } from '../../test/support/agents-world';
import { closeIdleHttpConnections } from '../../test/support/http';
import { median } from '../support/stats';

type Json = Record<string, any>;

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const LATENCY_MS = arg('latency', 150);
const RUNS = Math.max(1, arg('runs', 2));
/** `--trace`: print each run's event log as offsets from its `started` event. */
const TRACE = process.argv.includes('--trace');
const QUERY = 'fintech companies in Berlin';
const TARGET_RATIO = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const out = (line = '') => process.stdout.write(`${line}\n`);

interface RunResult {
  wallMs: number;
  /** From the first researcher's start to the notes compressed: the research step alone. */
  researchMs: number;
  sources: number;
  claims: number;
  supported: number;
  mostAtOnce: number;
}

async function research(served: ServedAgentsWorld, units: number): Promise<RunResult> {
  const s: AgentsStack = await startAgentsStack({
    checkResponses: false,
    service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } },
    worker: { searxngUrl: served.search.url, settings: { budgets: { fetches: 1_000, wallMs: 600_000, modelTokens: 50_000 } } },
  });
  try {
    const t = await s.tenant();
    const headers = { authorization: `Bearer ${t.key}` };
    const started = await s.call('POST', '/research/start', headers, { query: QUERY, serviceId: 'bench', max_concurrent_research_units: units, max_researcher_iterations: 3 });
    if (started.status !== 200) throw new Error(`start: ${started.status} ${started.text}`);
    const thread = started.json.thread_id as string;
    let status: Json = {};
    for (let i = 0; i < 6_000 && !['completed', 'error', 'stopped'].includes(status.status); i++) {
      await sleep(100);
      status = (await s.call('GET', `/research/status/${thread}`, headers)).json as Json;
    }
    if (status.status !== 'completed' || status.partial) throw new Error(`the run ended ${status.status}${status.partial ? ' (partial)' : ''}: ${status.message}`);
    const rows = await s.db.withTenant(t.tenantId, async (sql) => ({
      state: (await sql.query<{ state: Json }>(`SELECT state FROM agents.workflows WHERE thread_id = $1`, [thread])).rows[0]!.state,
      events: (await sql.query<{ type: string; at: Date }>(`SELECT type, created_at AS at FROM agents.workflow_events WHERE thread_id = $1 ORDER BY seq`, [thread])).rows,
    }));
    const first = rows.events.find((e) => e.type === 'started')!.at.getTime();
    const last = rows.events.find((e) => e.type === 'completed')!.at.getTime();
    const researchFrom = rows.events.find((e) => e.type === 'researcher_started')!.at.getTime();
    const researchTo = rows.events.find((e) => e.type === 'notes_compressed')!.at.getTime();
    if (TRACE) out(`  ${units} at once: ${rows.events.map((e) => `${e.type}+${e.at.getTime() - first}`).join(' ')}`);
    let now = 0;
    let most = 0;
    for (const e of rows.events) {
      if (e.type === 'researcher_started') most = Math.max(most, ++now);
      if (e.type === 'researcher_finished') now--;
    }
    const sources = new Map((rows.state.sources as ResearchSource[]).map((x) => [x.n, x]));
    // Every line but the run's own (title, areas' headings): the lines the citation checker checks.
    const claims = reportClaims(String(status.final_report), ownReportLines(readResearchState(rows.state)));
    const supported = claims.filter((c) => c.markers.length > 0 && c.markers.every((n) => sources.has(n) && supports(c.claim, sources.get(n)!))).length;
    return { wallMs: last - first, researchMs: researchTo - researchFrom, sources: sources.size, claims: claims.length, supported, mostAtOnce: most };
  } finally {
    await s.close();
    closeIdleHttpConnections();
  }
}

async function main(): Promise<void> {
  const served = await serveAgentsWorld(generateAgentsWorld(1));
  served.web.latencyMs = LATENCY_MS;
  try {
    out(`deep research benchmark: "${QUERY}", 5 areas x 3 iterations, web latency ${LATENCY_MS} ms, ${RUNS} run(s) of each, alternating`);
    out();
    out('run  researchers  wall (ms)  research step (ms)  pages read  most at once  claims  supported');
    const parallel: RunResult[] = [];
    const sequential: RunResult[] = [];
    for (let r = 1; r <= RUNS; r++) {
      for (const units of [5, 1]) {
        const res = await research(served, units);
        (units === 5 ? parallel : sequential).push(res);
        out(`${String(r).padStart(3)}  ${String(units).padStart(11)}  ${String(res.wallMs).padStart(9)}  ${String(res.researchMs).padStart(18)}  ${String(res.sources).padStart(10)}  ${String(res.mostAtOnce).padStart(12)}  ${String(res.claims).padStart(6)}  ${String(res.supported).padStart(9)}`);
      }
    }
    const p = median(parallel.map((x) => x.wallMs));
    const q = median(sequential.map((x) => x.wallMs));
    const ratio = q / p;
    const rp = median(parallel.map((x) => x.researchMs));
    const rq = median(sequential.map((x) => x.researchMs));
    const all = [...parallel, ...sequential];
    const claims = all.reduce((n, x) => n + x.claims, 0);
    const supported = all.reduce((n, x) => n + x.supported, 0);
    const share = claims === 0 ? 0 : supported / claims;
    out();
    out(`wall time, median: 5 at once ${p} ms, sequential ${q} ms: ${ratio.toFixed(2)}x faster (target >= ${TARGET_RATIO}x: ${ratio >= TARGET_RATIO ? 'met' : 'MISSED'})`);
    out(`research step alone, median: 5 at once ${rp} ms, sequential ${rq} ms: ${(rq / rp).toFixed(2)}x (the rest of the wall time — the message to the worker, the brief, the report — is the same in both)`);
    out(`report sentences with a supporting fetched source: ${supported} of ${claims} (${(share * 100).toFixed(1)}%; target 100%: ${share === 1 ? 'met' : 'MISSED'})`);
  } finally {
    await served.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
