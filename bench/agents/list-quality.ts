/**
 * List-quality benchmark (issue 13): ten list prompts on the agents test world, each run as a real company or
 * people search workflow through the gateway, its 25-row list held against the world's ground truth, next to the
 * keyword-match baseline (`keywordBaseline` of services/agents/src/domain/scoring.ts) computed in the same run over
 * the same candidates. Target: precision >= 0.9 (mean over the prompts). A missed target is printed, not an error:
 * the script exits non-zero only when something crashes.
 *
 *   bash test/infra/up.sh && npm run bench:lists [-- --configs directory,web,both]
 *
 * The stack is the integration suites' (test/agents/harness.ts): gateway and agents in this process, the agents
 * worker on real Kafka, PostgreSQL and Redis, no language model (the criteria come from the deterministic rules, as
 * with the embedded default). The world is `generateAgentsWorld(1)` (200 companies, 600 people), served on the
 * loopback web with its SearXNG-format endpoint (test/support/agents-world.ts). Three configurations:
 *
 * - `directory`: the tenant's directory seeded with the world's 800 records, no web search (a stack whose worker
 *   has no web source). Baseline candidates: every directory record of the kind (a person with their employer's
 *   record, as the scorer sees them) — the pool the workflow draws from.
 * - `web`: an empty directory, the web search on (SearXNG endpoint, pages read through the guarded page reader).
 *   Baseline candidates: the result pages of the searches the run made (their URLs answered again by the endpoint,
 *   each page read through the same page reader; a person's profile with their employer's home page), i.e. the
 *   pages the workflow could choose from.
 * - `both`: the seeded directory and the web search; baseline candidates: both pools.
 *
 * The baseline ranks every candidate of the pool and lists each entity once (a company's home, about and team pages
 * are one company), up to 25 — as the workflow keeps one row per entity.
 *
 * Keys: a company by its domain, a person by name at the company's domain (test/support/agents-world.ts); a web
 * row's key carries the loopback port (`<slug>.localhost:<port>`), which is dropped before comparing. Rows whose
 * keys collide after that (one company from the directory and again from the web) are counted as duplicates.
 */
import { keywordBaseline, upsertDirectoryRecords, webSource, type ScoringCandidate, type WebPageRead } from '@lore/agents';
import { startAgentsStack, type AgentsStack } from '../../test/agents/harness';
import type { TenantFixture } from '../../test/gateway/harness';
import {
  companyKey,
  generateAgentsWorld,
  listQuality,
  matching,
  personKey,
  serveAgentsWorld,
  worldDirectoryRecords,
  type ServedAgentsWorld,
  type WorldCriteria,
} from '../../test/support/agents-world';
import { requireEnv } from '../../test/support/infra';
import { closeIdleHttpConnections } from '../../test/support/http';

type Json = Record<string, any>;
type Config = 'directory' | 'web' | 'both';

const argStr = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? String(process.argv[i + 1]) : fallback;
};
const CONFIGS = argStr('configs', 'directory,web,both').split(',').map((c) => c.trim()) as Config[];
const LIMIT = 25;
const TARGET = 0.9;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

/** Ten prompts: companies and people by industry, place, size, founding year, role and seniority. */
const PROMPTS: Array<[string, WorldCriteria]> = [
  ['fintech companies in Berlin', { kind: 'company', industry: 'Fintech', city: 'Berlin' }],
  ['SaaS companies in France', { kind: 'company', industry: 'SaaS', country: 'FR' }],
  ['cybersecurity companies in London with 50-200 employees', { kind: 'company', industry: 'Cybersecurity', city: 'London', employeesMin: 50, employeesMax: 200 }],
  ['healthcare companies in New York founded after 2010', { kind: 'company', industry: 'Healthcare', city: 'New York', foundedFrom: 2011 }],
  ['robotics companies in Germany', { kind: 'company', industry: 'Robotics', country: 'DE' }],
  ['companies in the United States with more than 1,000 employees', { kind: 'company', country: 'US', employeesMin: 1001 }],
  ['CTOs of fintech companies', { kind: 'person', title: 'Chief Technology Officer', company: { industry: 'Fintech' } }],
  ['heads of marketing in Germany', { kind: 'person', title: 'Head of Marketing', country: 'DE' }],
  ['C-level executives at SaaS companies', { kind: 'person', seniority: 'c_level', company: { industry: 'SaaS' } }],
  ['senior software engineers in London', { kind: 'person', title: 'Senior Software Engineer', city: 'London' }],
];

/** A row's or a candidate's key without the loopback port. */
const dropPort = (key: string) => key.trim().toLowerCase().replace(/(\.localhost):\d+/g, '$1');
const hostOf = (url: string) => new URL(url).host;

const world = generateAgentsWorld(1);
const truthKey = (x: object) => ('companyDomain' in x ? personKey(x as { name: string; companyDomain: string }) : companyKey(x as { domain: string }));

interface Outcome {
  prompt: string;
  truth: number;
  rows: number;
  duplicates: number;
  precision: number;
  recall: number;
  /** Recall against what a 25-row list can hold: true positives / min(25, truth). */
  reach: number;
  status: string;
  seconds: number;
  candidates: number;
  baseline: { rows: number; precision: number; recall: number; reach: number };
  falsePositives: string[];
}

interface Pools {
  directory(kind: 'company' | 'person'): ScoringCandidate[];
}

/** The world's records as the directory holds them; a person with their employer's record (as the scorer reads it). */
function directoryPools(served: ServedAgentsWorld): Pools & { records: ReturnType<typeof worldDirectoryRecords> } {
  const records = worldDirectoryRecords(world, { port: served.web.port });
  const employers = new Map(records.filter((r) => r.kind === 'company').map((r) => [r.data.domain as string, r.data]));
  return {
    records,
    directory: (kind) =>
      records.filter((r) => r.kind === kind).map((r) => ({ kind, data: r.data, company: kind === 'person' ? (employers.get(r.data.company_domain as string) ?? null) : null })),
  };
}

const candidateKey = (c: ScoringCandidate): string =>
  dropPort(c.kind === 'company' ? String(c.data.domain ?? '') : `${String(c.data.name ?? '')}@${String(c.data.company_domain ?? '')}`);

/**
 * The web pool of one run: every result the searches it made were answered with (asked of the endpoint again,
 * without HTTP), each page read through the agents' guarded page reader and turned into a candidate as the
 * workflow turns it (a company from its page's facts; a person only from a profile, with the employer's home page).
 */
async function webPool(s: AgentsStack, served: ServedAgentsWorld, searchMark: number, kind: 'company' | 'person'): Promise<ScoringCandidate[]> {
  const reader = webSource({ provider: 'none', search: async () => ({ results: [] }) }, s.agents.agents.pages);
  const signal = new AbortController().signal;
  const urls: string[] = [];
  for (const req of served.search.requests.slice(searchMark)) {
    if (req.status !== 200) continue;
    for (const r of served.search.answer(req.params).results) if (!urls.includes(r.url)) urls.push(r.url);
  }
  const read = new Map<string, WebPageRead | null>();
  const page = async (url: string) => {
    if (!read.has(url)) read.set(url, await reader.fetchPage(url, signal).catch(() => null));
    return read.get(url) ?? null;
  };
  const out: ScoringCandidate[] = [];
  for (const url of urls) {
    const p = await page(url);
    if (!p) continue;
    const host = hostOf(p.url);
    const pageText = `${p.title}\n${p.text}`;
    if (kind === 'company') {
      out.push({ kind, data: { name: p.title.split(/\s[|–—-]\s/)[0]!.trim() || host, ...p.facts, domain: host, website: p.url }, company: null, pageText });
    } else if (p.person?.name) {
      const employer = (await page(new URL('/', p.url).toString()))?.facts ?? null;
      out.push({ kind, data: { ...p.person, profile_url: p.url, company_domain: host }, company: employer, pageText });
    }
  }
  return out;
}

async function waitEnded(s: AgentsStack, t: TenantFixture, path: string, timeoutMs = 180_000): Promise<Json> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const r = await s.call('GET', path, { authorization: `Bearer ${t.key}` });
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`);
    if (['completed', 'stopped', 'error'].includes(r.json.status as string)) return r.json as Json;
    if (now() > deadline) throw new Error(`${path} did not end in ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** One prompt as a workflow, its list judged, and the baseline over the same candidates. */
async function measure(s: AgentsStack, t: TenantFixture, served: ServedAgentsWorld | null, pools: Pools, config: Config, prompt: string, criteria: WorldCriteria): Promise<Outcome> {
  const kind = criteria.kind;
  const route = kind === 'company' ? 'company-search' : 'people-search';
  const searchMark = served?.search.requests.length ?? 0;
  const started = now();
  const start = await s.call('POST', `/${route}/start`, { authorization: `Bearer ${t.key}` }, { prompt, list_name: `bench: ${prompt}` });
  if (start.status !== 200) throw new Error(`start "${prompt}": ${start.status} ${start.text}`);
  const thread = start.json.thread_id as string;
  const snap = await waitEnded(s, t, `/${route}/status/${thread}`);
  const seconds = (now() - started) / 1000;
  if (snap.status !== 'completed') throw new Error(`"${prompt}" (${config}) ended ${snap.status}: ${snap.error_message}`);

  const truth = matching(world, criteria).map(truthKey);
  const keys = (snap.all_companies as Json[]).map((r) => dropPort(String(r.entity_key)));
  const q = listQuality(keys, truth);

  const pool: ScoringCandidate[] = [];
  if (config !== 'web') pool.push(...pools.directory(kind));
  if (config !== 'directory' && served) pool.push(...(await webPool(s, served, searchMark, kind)));
  // The baseline ranks every candidate; like the workflow (one row per entity key) it lists each entity once — a
  // company's home, about and team pages are one company — up to 25.
  const base: string[] = [];
  for (const b of keywordBaseline(prompt, pool, pool.length)) {
    const key = candidateKey(b.candidate);
    if (base.length >= LIMIT) break;
    if (!base.includes(key)) base.push(key);
  }
  const bq = listQuality(base, truth);
  const sourceOf = new Map<string, string>();
  for (const row of snap.table_structure.rows as Json[]) sourceOf.set(String(row.id), String(row.metadata?.source?.source_url ?? ''));
  const rowSource = new Map((snap.all_companies as Json[]).map((r) => [dropPort(String(r.entity_key)), sourceOf.get(String(r.row_id)) ?? '']));
  const attainable = Math.min(LIMIT, truth.length);
  return {
    prompt,
    truth: truth.length,
    rows: keys.length,
    duplicates: keys.length - new Set(keys).size,
    precision: q.precision,
    recall: q.recall,
    reach: attainable === 0 ? 1 : q.truePositives / attainable,
    status: snap.status as string,
    seconds,
    candidates: pool.length,
    baseline: { rows: base.length, precision: bq.precision, recall: bq.recall, reach: attainable === 0 ? 1 : bq.truePositives / attainable },
    falsePositives: q.falsePositives.map((k) => `${k} (from ${rowSource.get(k) || '?'})`),
  };
}

const f2 = (x: number) => x.toFixed(2);
const pad = (s: string | number, n: number) => String(s).padEnd(n);
const padl = (s: string | number, n: number) => String(s).padStart(n);
const f1 = (p: number, r: number) => (p + r === 0 ? 0 : (2 * p * r) / (p + r));
const mean = (xs: number[]) => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length);

function table(config: Config, rows: Outcome[]): string {
  const head = `${pad('prompt', 64)}${padl('truth', 6)}${padl('rows', 6)}${padl('P', 7)}${padl('R', 7)}${padl('R@25', 7)}  |${padl('cand.', 7)}${padl('rows', 6)}${padl('P', 7)}${padl('R', 7)}${padl('R@25', 7)}  |${padl('s', 6)}`;
  const lines = rows.map(
    (r) =>
      `${pad(r.prompt, 64)}${padl(r.truth, 6)}${padl(r.rows, 6)}${padl(f2(r.precision), 7)}${padl(f2(r.recall), 7)}${padl(f2(r.reach), 7)}  |${padl(r.candidates, 7)}${padl(r.baseline.rows, 6)}${padl(f2(r.baseline.precision), 7)}${padl(f2(r.baseline.recall), 7)}${padl(f2(r.baseline.reach), 7)}  |${padl(r.seconds.toFixed(1), 6)}` +
      (r.duplicates > 0 ? `  (${r.duplicates} duplicate rows)` : ''),
  );
  const m = (f: (r: Outcome) => number) => f2(mean(rows.map(f)));
  const meanLine = `${pad('mean', 64)}${padl('', 6)}${padl('', 6)}${padl(m((r) => r.precision), 7)}${padl(m((r) => r.recall), 7)}${padl(m((r) => r.reach), 7)}  |${padl('', 7)}${padl('', 6)}${padl(m((r) => r.baseline.precision), 7)}${padl(m((r) => r.baseline.recall), 7)}${padl(m((r) => r.baseline.reach), 7)}  |${padl(mean(rows.map((r) => r.seconds)).toFixed(1), 6)}`;
  const fps = rows.filter((r) => r.falsePositives.length > 0).map((r) => `  false positives of "${r.prompt}": ${r.falsePositives.slice(0, 5).join(', ')}${r.falsePositives.length > 5 ? ` … (${r.falsePositives.length})` : ''}`);
  const precision = mean(rows.map((r) => r.precision));
  return [
    `configuration: ${config}`,
    `${pad('', 64)}${pad('  workflow (25-row list)', 40)}  |${pad('  keyword-match baseline, same candidates', 41)}  |`,
    head,
    ...lines,
    meanLine,
    ...fps,
    `ratio, workflow / baseline     precision ${f2(precision / mean(rows.map((r) => r.baseline.precision)))}x   R@25 ${f2(mean(rows.map((r) => r.reach)) / mean(rows.map((r) => r.baseline.reach)))}x   F1 ${f2(mean(rows.map((r) => f1(r.precision, r.reach))))} vs ${f2(mean(rows.map((r) => f1(r.baseline.precision, r.baseline.reach))))} (of P and R@25; an empty list's precision is 1, so F1 is the fairer comparison)`,
    `verdict (${config})             mean precision ${f2(precision)} — ${precision >= TARGET ? 'target met' : 'target MISSED'} (target >= ${TARGET})`,
  ].join('\n');
}

async function main(): Promise<void> {
  requireEnv('LORE_TEST_PG_URL');
  const served = await serveAgentsWorld(world);
  const pools = directoryPools(served);
  const seed = async (s: AgentsStack, t: TenantFixture) => upsertDirectoryRecords(s.db, t.tenantId, pools.records.map((r) => ({ kind: r.kind, data: r.data, source: r.source })));
  const out: string[] = [];
  const run = async (s: AgentsStack, config: Config, seeded: boolean, web: ServedAgentsWorld | null) => {
    const t = await s.tenant();
    if (seeded) await seed(s, t);
    const rows: Outcome[] = [];
    for (const [prompt, criteria] of PROMPTS) rows.push(await measure(s, t, web, pools, config, prompt, criteria));
    const text = table(config, rows);
    process.stdout.write(`${text}\n\n`);
    out.push(text);
  };
  try {
    process.stdout.write(
      `list-quality benchmark: ${PROMPTS.length} prompts on the test world (seed 1: ${world.companies.length} companies, ${world.people.length} people), each a workflow through the gateway ` +
        `(rules, no language model; worker on real Kafka), its ${LIMIT}-row list against the ground truth; the keyword-match baseline over the same candidates in the same run.\n` +
        `P precision, R recall (of the whole truth), R@25 recall of what a ${LIMIT}-row list can hold (true positives / min(${LIMIT}, truth)); cand. = baseline candidates; s = workflow start to ended.\n\n`,
    );
    if (CONFIGS.includes('directory')) {
      const s = await startAgentsStack({ checkResponses: false, worker: {} });
      try {
        await run(s, 'directory', true, null);
      } finally {
        await s.close();
      }
    }
    if (CONFIGS.includes('web') || CONFIGS.includes('both')) {
      const s = await startAgentsStack({ checkResponses: false, service: { webTargets: { allowLoopback: true, lookup: served.web.lookup } }, worker: { searxngUrl: served.search.url } });
      try {
        if (CONFIGS.includes('web')) await run(s, 'web', false, served);
        if (CONFIGS.includes('both')) await run(s, 'both', true, served);
      } finally {
        await s.close();
      }
    }
  } finally {
    await served.close();
    closeIdleHttpConnections();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
