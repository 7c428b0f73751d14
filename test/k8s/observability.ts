import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../operator/test/support/kube';

/** What one command printed and how it ended. */
export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command; never throws on a non-zero exit (a failing promtool is what some tests look for). */
export function runCommand(bin: string, args: string[], options: { cwd?: string; timeoutMs?: number } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    execFile(bin, args, { cwd: options.cwd, timeout: options.timeoutMs ?? 120_000, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err && typeof (err as { code?: unknown }).code !== 'number') return reject(err);
      resolve({ code: err ? Number((err as { code: number }).code) : 0, stdout, stderr });
    });
  });
}

/**
 * The path of promtool, built from the Go module proxy by test/infra/promtool/build.sh: cached after the first
 * build; while the test command's background build runs, the script waits for it (its lock) and then finds it.
 */
export async function promtoolBin(): Promise<string> {
  const r = await runCommand('bash', [join(REPO_ROOT, 'test', 'infra', 'promtool', 'build.sh')], { timeoutMs: 40 * 60_000 });
  if (r.code !== 0) throw new Error(`test/infra/promtool/build.sh failed (${r.code}):\n${r.stderr.slice(-4000)}`);
  return r.stdout.trim().split('\n').pop()!;
}

/** Where test/infra/promtool/build.sh puts the Prometheus Operator's PrometheusRule and ServiceMonitor CRDs. */
export async function crdDir(): Promise<string> {
  const r = await runCommand('bash', [join(REPO_ROOT, 'test', 'infra', 'promtool', 'build.sh'), '--print-crd-dir']);
  if (r.code !== 0) throw new Error(`test/infra/promtool/build.sh --print-crd-dir failed: ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * The rule groups of a rendered PrometheusRule as a Prometheus rules file: its `spec` block (`groups:` and what
 * follows), un-indented. The chart renders exactly one PrometheusRule when it renders any.
 */
export function rulesFileOf(renderedPrometheusRule: string): string {
  const lines = renderedPrometheusRule.split('\n');
  const start = lines.indexOf('spec:');
  if (start < 0) throw new Error(`no spec in the rendered PrometheusRule:\n${renderedPrometheusRule}`);
  const body: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line === '---') break;
    if (line.trim() !== '' && !line.startsWith('  ')) throw new Error(`unexpected line after the PrometheusRule's spec: ${line}`);
    body.push(line.slice(2));
  }
  return `${body.join('\n')}\n`;
}

/** Alert names of a rules file, in order. */
export function alertNames(rules: string): string[] {
  return [...rules.matchAll(/^\s*- alert: (\S+)$/gm)].map((m) => m[1]!);
}

/**
 * Metric names a Prometheus text exposition declares (`# TYPE` lines), with the series names a histogram or summary
 * exposes (`_bucket`, `_sum`, `_count`).
 */
export function exposedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
  }
  return names;
}

/**
 * The metric names a PromQL expression (of Lore's dashboards and alerts) reads: every identifier outside quoted
 * strings that starts with `lore_` — Lore's metrics all do (registry.ts), and the check that nothing else is read is
 * `foreignNames`.
 */
export function metricNames(expr: string): string[] {
  const bare = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...new Set([...bare.matchAll(/\b(lore_[a-zA-Z0-9_:]*)/g)].map((m) => m[1]!))];
}

/** Identifiers followed by `{` that are not Lore metrics: a selector of a metric the processes do not export. */
export function foreignSelectors(expr: string): string[] {
  const bare = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...bare.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{/g)].map((m) => m[1]!).filter((n) => !n.startsWith('lore_'));
}

/** A dashboard query as Prometheus would get it: Grafana's variables replaced by values of the kind they stand for. */
export function concreteQuery(expr: string, namespace: string): string {
  return expr
    .replace(/\$__rate_interval|\$__interval|\$\{__rate_interval\}|\$\{__interval\}/g, '2m')
    .replace(/\$__range|\$\{__range\}/g, '1h')
    .replace(/\$\{?namespace\}?/g, namespace);
}

/** The expression of each alert of a rules file (its `expr: |` block). */
export function alertExprs(rules: string): Array<{ alert: string; expr: string }> {
  const out: Array<{ alert: string; expr: string }> = [];
  const lines = rules.split('\n');
  let alert = '';
  for (let i = 0; i < lines.length; i++) {
    const a = /^\s*- alert: (\S+)$/.exec(lines[i]!);
    if (a) alert = a[1]!;
    const e = /^(\s*)expr: \|$/.exec(lines[i]!);
    if (!e) continue;
    const body: string[] = [];
    while (i + 1 < lines.length && (lines[i + 1]!.trim() === '' || lines[i + 1]!.search(/\S/) > e[1]!.length)) body.push(lines[++i]!.trim());
    out.push({ alert, expr: body.join('\n').trim() });
  }
  return out;
}
