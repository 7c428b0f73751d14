import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { KubeConnection } from '../../src/kube/client';
import { requireEnv } from '../../../test/support/infra';

export const REPO_ROOT = join(__dirname, '..', '..', '..');

/**
 * The test control plane started by test/infra/k8s/up.sh, whose env file the test command sources. A missing
 * variable fails the suite: these suites never skip.
 */
export function testConnection(): KubeConnection {
  const server = requireEnv('LORE_KUBE_SERVER');
  const ca = readFileSync(requireEnv('LORE_KUBE_CA_FILE'));
  const token = readFileSync(requireEnv('LORE_KUBE_TOKEN_FILE'), 'utf8').trim();
  return { server, ca, headers: async () => ({ authorization: `Bearer ${token}` }) };
}

export interface CmdResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a binary of the harness (kubectl, helm) with the test kubeconfig; never throws on a non-zero exit. */
export function run(bin: string, args: string[], input?: string, timeoutMs = 120_000): Promise<CmdResult> {
  return new Promise((resolve, reject) => {
    // Standard input only when there is input: a command that reads none may exit before an (empty) write reaches
    // it, and the write then fails with EPIPE (seen under a CPU hog), which has nothing to do with the command.
    const child = spawn(bin, args, { env: { ...process.env, KUBECONFIG: requireEnv('KUBECONFIG') }, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    if (input !== undefined && child.stdin) {
      // A command that exits without reading all of its input (it failed early) is judged by its exit code and
      // stderr, not by the broken pipe.
      child.stdin.on('error', () => undefined);
      child.stdin.end(input);
    }
  });
}

export function kubectl(args: string[], input?: string): Promise<CmdResult> {
  return run(requireEnv('LORE_KUBECTL'), args, input);
}

export function helm(args: string[]): Promise<CmdResult> {
  return run(requireEnv('LORE_HELM'), args);
}

/** kubectl that must succeed; returns stdout. */
export async function kubectlOk(args: string[], input?: string): Promise<string> {
  const r = await kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

export async function kubectlJson<T = any>(args: string[]): Promise<T> {
  return JSON.parse(await kubectlOk([...args, '-o', 'json'])) as T;
}

/** Installs (or updates) the CRDs from crds/ and waits until the API server serves them. */
export async function installCrds(): Promise<void> {
  await kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(REPO_ROOT, 'crds')]);
  await waitCrdsEstablished(['memories.lore.dev', 'apikeys.lore.dev']);
}

/**
 * Waits until every named CRD reports `Established=True`. Polls rather than using `kubectl wait`, which fails at
 * once (instead of waiting) while a just-created CRD has no `status.conditions` at all.
 */
export async function waitCrdsEstablished(names: string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    for (;;) {
      const r = await kubectl(['get', `crd/${name}`, '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}']);
      if (r.code === 0 && r.stdout.trim() === 'True') break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established within ${timeoutMs} ms: ${r.stderr || r.stdout || 'no condition yet'}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

export function runId(): string {
  return randomBytes(4).toString('hex');
}

/** A namespace for one test, labelled with the suite's run id (the operator under test serves only those). */
export async function createNamespace(run: string, opts: { tenant?: string; tenantAnnotation?: string; prefix?: string } = {}): Promise<string> {
  const name = `${opts.prefix ?? 'lt'}-${run}-${randomBytes(3).toString('hex')}`;
  const labels: Record<string, string> = { 'lore.dev/test-run': run };
  if (opts.tenant) labels['lore.dev/tenant'] = opts.tenant;
  const annotations: Record<string, string> = {};
  if (opts.tenantAnnotation) annotations['lore.dev/tenant'] = opts.tenantAnnotation;
  await kubectlOk(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels, annotations } }));
  return name;
}

export function execFileText(bin: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => execFile(bin, args, (err, stdout) => (err ? reject(err) : resolve(stdout))));
}

/** The condition of `type` in an object's status, if it has one. */
export function condition(obj: any, type: string): any {
  return (obj.status?.conditions ?? []).find((c: any) => c.type === type);
}
