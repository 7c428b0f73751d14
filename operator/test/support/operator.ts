import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, createMetricsRegistry } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { composeOperator, type ComposedOperator } from '../../src/compose';
import type { OperatorConfig } from '../../src/config';
import type { ControllerHooks } from '../../src/controllers/settings';
import type { KubeConnection } from '../../src/kube/client';
import { ADMIN_TOKEN, startPlatform, type Platform } from './platform';
import { REPO_ROOT, installCrds, kubectlOk, runId, testConnection } from './kube';
import { requireEnv } from '../../../test/support/infra';
import { waitFor } from './wait';

export const BASE_DOMAIN = 'mem.lore.test';
export const GATEWAY_SERVICE = 'lore-gateway';

export interface SuiteScope {
  run: string;
  /** Namespace standing in for the release namespace: gateway Service's Ingresses and the Lease go there. */
  systemNamespace: string;
}

/** Creates the suite's system namespace (not labelled for the operator: nothing of users lives there). */
export async function createSystemNamespace(run: string): Promise<string> {
  const name = `lore-sys-${run}`;
  await kubectlOk(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }));
  return name;
}

export function operatorConfig(scope: SuiteScope, platform: Platform, overrides: Partial<OperatorConfig> = {}): OperatorConfig {
  return {
    logLevel: 'warn',
    health: { host: '127.0.0.1', port: 0 },
    admin: { url: platform.adminUrl, token: ADMIN_TOKEN },
    settings: {
      baseDomain: BASE_DOMAIN,
      // The suites name custom hostnames under example.org.
      hostnameDomains: ['example.org'],
      gatewayNamespace: scope.systemNamespace,
      gatewayServiceName: GATEWAY_SERVICE,
      gatewayServicePort: 80,
      ingress: { className: 'nginx', annotations: { 'lore.dev/test': 'yes' }, tls: { mode: 'none' } },
      defaultDataRetention: 'Retain',
      memoryKeyOverlapSeconds: 60,
    },
    namespaceSelector: `lore.dev/test-run=${scope.run}`,
    workers: 4,
    resyncMs: 0,
    identity: `in-process-${scope.run}`,
    ...overrides,
  };
}

export interface InProcessOperator {
  composed: ComposedOperator;
  registry: Registry;
  metricsUrl: string;
  stop(): Promise<void>;
}

/** The operator inside the test process: same composition as main.ts, on the test control plane. */
export async function startInProcessOperator(config: OperatorConfig, hooks?: ControllerHooks, connection: KubeConnection = testConnection()): Promise<InProcessOperator> {
  const registry = createMetricsRegistry('operator', { defaultMetrics: false });
  const composed = composeOperator({
    config,
    connection,
    logger: createLogger({ level: process.env.LORE_TEST_OPERATOR_LOG ?? config.logLevel, service: 'operator' }),
    registry,
    hooks,
  });
  const server = await composed.start();
  return { composed, registry, metricsUrl: `${server.url}/metrics`, stop: () => composed.stop() };
}

/** What a suite of the in-process operator works with; set before its first test. */
export interface InProcessOperatorSuite {
  platform: Platform;
  op: InProcessOperator;
  scope: SuiteScope;
}

/**
 * The hooks of a suite that runs the operator in process against a platform of its own: CRDs installed, the run's
 * system namespace, both started before the first test and stopped after the last.
 */
export function inProcessOperatorSuite(): InProcessOperatorSuite {
  const suite = {} as InProcessOperatorSuite;
  beforeAll(async () => {
    await installCrds();
    const run = runId();
    suite.scope = { run, systemNamespace: await createSystemNamespace(run) };
    suite.platform = await startPlatform();
    suite.op = await startInProcessOperator(operatorConfig(suite.scope, suite.platform));
  });
  afterAll(async () => {
    await suite.op?.stop();
    await suite.platform?.close();
  });
  return suite;
}

export interface OperatorProcess {
  child: ChildProcess;
  healthUrl: string;
  output: () => string;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/** The compiled operator (`node operator/dist/main.js`, built by `tsc -b`) as its own process, like a pod. */
export async function spawnOperator(env: Record<string, string>, port: number): Promise<OperatorProcess> {
  const main = join(REPO_ROOT, 'operator', 'dist', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run "npx tsc -b" first (the test command does)`);
  const child = spawn(process.execPath, [main], {
    env: {
      PATH: process.env.PATH ?? '',
      KUBECONFIG: requireEnv('KUBECONFIG'),
      LOG_LEVEL: 'info',
      LORE_OPERATOR_HEALTH_HOST: '127.0.0.1',
      LORE_OPERATOR_HEALTH_PORT: String(port),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  const healthUrl = `http://127.0.0.1:${port}`;
  return {
    child,
    healthUrl,
    output: () => out,
    exited,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Environment of an operator process serving the suite's namespaces. */
export function operatorEnv(scope: SuiteScope, platform: Platform, extra: Record<string, string> = {}): Record<string, string> {
  return {
    LORE_OPERATOR_ADMIN_URL: platform.adminUrl,
    LORE_OPERATOR_ADMIN_TOKEN: ADMIN_TOKEN,
    LORE_OPERATOR_BASE_DOMAIN: BASE_DOMAIN,
    LORE_OPERATOR_HOSTNAME_DOMAINS: 'example.org',
    LORE_OPERATOR_GATEWAY_NAMESPACE: scope.systemNamespace,
    LORE_OPERATOR_GATEWAY_SERVICE: GATEWAY_SERVICE,
    LORE_OPERATOR_NAMESPACE_SELECTOR: `lore.dev/test-run=${scope.run}`,
    LORE_OPERATOR_LEASE_NAMESPACE: scope.systemNamespace,
    LORE_OPERATOR_RESYNC_SECONDS: '0',
    ...extra,
  };
}

/** Parses one metric's samples from a Prometheus text exposition. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const lbls = Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => lbls[k] === v)) total += Number(m[4]);
  }
  return total;
}

export async function fetchText(url: string): Promise<string> {
  const r = await fetch(url);
  return r.text();
}

export async function waitHealthy(p: OperatorProcess, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    'operator /readyz',
    async () => {
      if (p.child.exitCode !== null) throw new Error(`operator exited: ${p.output().slice(-2000)}`);
      const r = await fetch(`${p.healthUrl}/readyz`).catch(() => undefined);
      return r?.status === 200;
    },
    timeoutMs,
  );
}
