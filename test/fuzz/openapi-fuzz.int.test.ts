import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/install';
import { startFuzzStack, type FuzzStack } from './stack';

/**
 * Every served OpenAPI document (the gateway's, the graph's, core's and agents') fuzzed by Schemathesis through the
 * gateway, with a bounded budget, on the cluster-mode services over real PostgreSQL, Redis and Kafka (docs/fuzzing.md):
 * no server error, no status, header, content type or body its document does not declare, no schema-violating
 * request accepted, no undeclared method answered other than 405 with a matching Allow.
 */

/** The checks, and why the others are left out: docs/fuzzing.md. */
const FUZZ_CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_headers_conformance',
  'response_schema_conformance',
  'negative_data_rejection',
  'missing_required_header',
  'ignored_auth',
  'unsupported_method',
  'allow_header_conformance',
];

/**
 * Seconds of Schemathesis's fuzzing phase per document; LORE_FUZZ_SECONDS overrides. The coverage phase before it (one
 * pass of generated cases over every operation) is not bounded by time but by its cases, so a slow machine still tests
 * every operation: bounded by time, it stopped part-way through the agents document's sixty operations on a busy one.
 */
const BUDGET_S = Number(process.env.LORE_FUZZ_SECONDS || 15);
/** A hung coverage phase ends here (it takes 10–50 s per document on a 2-core machine). */
const COVERAGE_CAP_S = 180;
/** The seed every run uses, so a failure replays (LORE_FUZZ_SEED explores others). */
const SEED = process.env.LORE_FUZZ_SEED || '20261128';

const DOCUMENTS: Array<{ name: string; path: string; exclude?: string[] }> = [
  { name: 'gateway', path: '/api/v1/openapi.json' },
  // The graph-internal routes (tag `internal`) are never forwarded by the gateway: they answer 404 there by design.
  { name: 'graph', path: '/openapi.json', exclude: ['--exclude-tag', 'internal'] },
  { name: 'core', path: '/api/openapi.json' },
  { name: 'agents', path: '/api/agents/openapi.json' },
];

jest.setTimeout((60 + COVERAGE_CAP_S + BUDGET_S + 30) * 1000);

interface Run {
  code: number | null;
  output: string;
}

/** Runs Schemathesis without blocking this process (the services it fuzzes answer from this event loop). */
function schemathesis(bin: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** Schemathesis's report, its FAILURES section first, every line at most 400 characters, 20,000 in all. */
function readableReport(output: string): string {
  const lines = output.split('\n').map((l) => (l.length > 400 ? `${l.slice(0, 400)}… (${l.length} characters)` : l));
  const start = lines.findIndex((l) => /=+ FAILURES =+/.test(l));
  const end = start < 0 ? -1 : lines.findIndex((l, i) => i > start && /=+ (WARNINGS|SUMMARY) =+/.test(l));
  const failures = start < 0 ? [] : lines.slice(start, end < 0 ? undefined : end);
  return [...failures, '…', ...lines.slice(-120)].join('\n').slice(0, 20_000);
}

describe('Schemathesis over every served OpenAPI document, through the gateway', () => {
  let bin: string;
  let stack: FuzzStack;
  let reports: string;

  beforeAll(async () => {
    // Installed by the test command; cached, so this returns at once when it already ran.
    bin = execFileSync('bash', [join(REPO_ROOT, 'test', 'infra', 'schemathesis.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    stack = await startFuzzStack();
    reports = mkdtempSync(join(tmpdir(), 'lore-fuzz-'));
  });
  afterAll(async () => {
    await stack?.close();
    if (reports) rmSync(reports, { recursive: true, force: true });
  });

  it.each(DOCUMENTS)('$name: no server error, no answer its document does not declare', async ({ name, path, exclude }) => {
    // The key and the session belong to two tenants: the session's key management (rotate, revoke) cannot take the
    // key the rest of the run uses away, whatever identifiers the fuzzer learns.
    const { key } = await stack.credentials();
    const { session } = await stack.credentials();
    const base = stack.gateway.publicUrl;
    /** One Schemathesis run of one phase over the document; its JUnit report must list no failure and no error. */
    const phase = async (which: 'coverage' | 'fuzzing', maxTime: number): Promise<{ output: string; generated: number }> => {
      const junit = join(reports, `${name}-${which}.xml`);
      const started = Date.now();
      const run = await schemathesis(
        bin,
        [
          '--config-file', join(__dirname, 'schemathesis.toml'),
          'run', `${base}${path}`, '--url', base,
          '--phases', which,
          '--checks', FUZZ_CHECKS.join(','),
          '--max-examples', '10',
          '--max-time', String(maxTime),
          '--request-timeout', '10',
          '--seed', SEED,
          // More workers trip a thread-safety fault in Schemathesis's generator ("Inconsistent results").
          '--workers', '1',
          // A generation health check of Schemathesis (too many drawn values thrown away), not an answer of Lore's.
          '--suppress-health-check', 'filter_too_much',
          '--no-color',
          '--report', 'junit', '--report-junit-path', junit,
          ...(exclude ?? []),
        ],
        // The credentials reach Schemathesis through the configuration's ${...} references, never on its command
        // line; it masks them in what it prints.
        { LORE_FUZZ_API_KEY: key, LORE_FUZZ_SESSION: session },
      );
      process.stdout.write(`fuzz ${name} ${which}: ${Math.round((Date.now() - started) / 1000)}s, exit ${run.code}\n`);
      // Schemathesis's own report of what it found when the run is not clean: its failures first, each line cut short
      // (a generated value can be tens of kilobytes long and would push everything else out of the message).
      if (run.code !== 0) throw new Error(`Schemathesis found problems in the ${name} document (${which}, seed ${SEED}):\n${readableReport(run.output)}`);
      expect(run.output).not.toContain(key);
      const xml = readFileSync(junit, 'utf8');
      expect(xml).toMatch(/<testsuite[^>]* failures="0"/);
      expect(xml).toMatch(/<testsuite[^>]* errors="0"/);
      const summary = /(\d+) generated, (?:(\d+) passed|(\d+) found)/.exec(run.output);
      return { output: run.output, generated: Number(summary?.[1] ?? 0) };
    };

    const coverage = await phase('coverage', COVERAGE_CAP_S);
    // The coverage phase tested every operation it selected: a document that failed to load, a run that generated
    // nothing, or one cut short by the cap is no pass.
    const selected = /Selected: (\d+)\/\d+/.exec(coverage.output);
    const tested = /Tested: (\d+)/.exec(coverage.output);
    if (!(selected && tested && Number(tested[1]) === Number(selected[1]) && Number(selected[1]) > 10)) {
      throw new Error(`Schemathesis did not test every selected operation of the ${name} document (${selected?.[0] ?? 'no selection'}, ${tested?.[0] ?? 'nothing tested'}):\n${coverage.output.slice(-6_000)}`);
    }
    const fuzzing = await phase('fuzzing', BUDGET_S);
    expect(fuzzing.generated).toBeGreaterThan(0);
    expect(coverage.generated + fuzzing.generated).toBeGreaterThan(200);
  });
});
