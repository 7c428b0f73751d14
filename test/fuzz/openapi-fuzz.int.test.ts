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

/** Seconds of Schemathesis per document (coverage, then fuzzing until it is spent); LORE_FUZZ_SECONDS overrides. */
const BUDGET_S = Number(process.env.LORE_FUZZ_SECONDS || 25);
/** The seed every run uses, so a failure replays (LORE_FUZZ_SEED explores others). */
const SEED = process.env.LORE_FUZZ_SEED || '20261128';

/**
 * `extra`: seconds beyond the budget for a document whose coverage phase alone (one pass over every operation) nears
 * the budget on a busy machine: agents has 1.5 times the operations of the others, and a run that stops before it has
 * tested every operation fails below.
 */
const DOCUMENTS: Array<{ name: string; path: string; exclude?: string[]; extra?: number }> = [
  { name: 'gateway', path: '/api/v1/openapi.json' },
  // The graph-internal routes (tag `internal`) are never forwarded by the gateway: they answer 404 there by design.
  { name: 'graph', path: '/openapi.json', exclude: ['--exclude-tag', 'internal'] },
  { name: 'core', path: '/api/openapi.json' },
  { name: 'agents', path: '/api/agents/openapi.json', extra: 15 },
];

jest.setTimeout(120_000 + (BUDGET_S + 15) * 1000 * 2);

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

  it.each(DOCUMENTS)('$name: no server error, no answer its document does not declare', async ({ name, path, exclude, extra }) => {
    // The key and the session belong to two tenants: the session's key management (rotate, revoke) cannot take the
    // key the rest of the run uses away, whatever identifiers the fuzzer learns.
    const { key } = await stack.credentials();
    const { session } = await stack.credentials();
    const base = stack.gateway.publicUrl;
    const junit = join(reports, `${name}.xml`);
    const started = Date.now();
    const run = await schemathesis(
      bin,
      [
        '--config-file', join(__dirname, 'schemathesis.toml'),
        'run', `${base}${path}`, '--url', base,
        '--phases', 'coverage,fuzzing',
        '--checks', FUZZ_CHECKS.join(','),
        '--max-examples', '10',
        '--max-time', String(BUDGET_S + (extra ?? 0)),
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
      // The credentials reach Schemathesis through the configuration's ${...} references, never on its command line;
      // it masks them in what it prints.
      { LORE_FUZZ_API_KEY: key, LORE_FUZZ_SESSION: session },
    );
    const seconds = Math.round((Date.now() - started) / 1000);
    process.stdout.write(`fuzz ${name}: ${seconds}s, exit ${run.code}\n`);
    const summary = /(\d+) generated, (?:(\d+) passed|(\d+) found)/.exec(run.output);
    // Schemathesis's own report of what it found, in full, when the run is not clean.
    if (run.code !== 0) throw new Error(`Schemathesis found problems in the ${name} document (seed ${SEED}):\n${run.output.slice(-20_000)}`);
    expect(run.output).not.toContain(key);
    // The run tested every operation it selected and sent cases to each: a document that failed to load, or a run
    // that generated nothing, is no pass.
    const selected = /Selected: (\d+)\/\d+/.exec(run.output);
    const tested = /Tested: (\d+)/.exec(run.output);
    if (!(selected && tested && Number(tested[1]) === Number(selected[1]) && Number(selected[1]) > 10)) {
      throw new Error(`Schemathesis did not test every selected operation of the ${name} document (${selected?.[0] ?? 'no selection'}, ${tested?.[0] ?? 'nothing tested'}):\n${run.output.slice(-6_000)}`);
    }
    expect(Number(summary?.[1] ?? 0)).toBeGreaterThan(200);
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toMatch(/<testsuite[^>]* failures="0"/);
    expect(xml).toMatch(/<testsuite[^>]* errors="0"/);
  });
});
