import { Lifecycle, createHttpApp, listen, opsRouter, type Logger, type StartedServer } from '@lore/runtime/kit';
import type { Registry } from 'prom-client';
import type { OperatorConfig } from './config';
import type { ControllerHooks } from './controllers/settings';
import { HttpKubeClient, type KubeConnection } from './kube/client';
import { LoreOperator } from './operator';
import { HttpPlatformAdmin, type PlatformAdmin } from './platform/admin-client';
import { createOperatorMetrics } from './runtime/metrics';

export interface ComposeOptions {
  config: OperatorConfig;
  connection: KubeConnection;
  logger: Logger;
  registry: Registry;
  /** Another admin client (tests); by default the HTTP client of the configured admin URL. */
  admin?: PlatformAdmin;
  hooks?: ControllerHooks;
  onLostLeadership?: () => void;
}

export interface ComposedOperator {
  operator: LoreOperator;
  kube: HttpKubeClient;
  lifecycle: Lifecycle;
  /** Starts the probe server and the operator; resolves once the caches are synced. */
  start(): Promise<StartedServer>;
  stop(): Promise<void>;
}

/** Builds the operator process from its config: clients, metrics, the operator and its probe server. */
export function composeOperator(opts: ComposeOptions): ComposedOperator {
  const { config, logger, registry } = opts;
  const metrics = createOperatorMetrics(registry);
  const kube = new HttpKubeClient(opts.connection, ({ verb, resource, status, seconds }) => {
    metrics.kubeRequests.inc({ verb, resource, code: String(status) });
    if (verb !== 'watch') metrics.kubeRequestDuration.observe({ verb }, seconds);
  });
  const admin =
    opts.admin ??
    new HttpPlatformAdmin({
      baseUrl: config.admin.url,
      token: config.admin.token,
      observe: (operation, status, seconds) => {
        metrics.platformRequests.inc({ operation, status: String(status) });
        metrics.platformRequestDuration.observe({ operation }, seconds);
      },
    });
  const operator = new LoreOperator({
    kube,
    admin,
    logger,
    metrics,
    settings: config.settings,
    identity: config.identity,
    namespaceSelector: config.namespaceSelector,
    workers: config.workers,
    resyncMs: config.resyncMs,
    leaderElection: config.leaderElection,
    hooks: opts.hooks,
    onLostLeadership: opts.onLostLeadership,
  });
  const lifecycle = new Lifecycle(logger);
  // Ready once the caches are synced, on standbys too: readiness says the process works, not that it leads.
  lifecycle.addCheck('caches', async () => ({ ok: operator.synced, details: { leader: operator.isLeader } }));

  let server: StartedServer | undefined;
  return {
    operator,
    kube,
    lifecycle,
    async start() {
      const app = createHttpApp({ service: 'operator', logger, metrics: registry });
      app.use(opsRouter(lifecycle, registry).routes());
      server = await listen(app, config.health.port, config.health.host);
      // Hooks run in reverse order: the operator drains its controllers and releases the Lease while the kube
      // client still works, then the client closes, then the probe server.
      lifecycle.onShutdown('probe server', () => server!.close(1_000));
      lifecycle.onShutdown('kube client', async () => kube.close());
      lifecycle.onShutdown('operator', () => operator.stop(), 15_000);
      await operator.start();
      lifecycle.markStarted();
      return server;
    },
    stop: () => lifecycle.shutdown('stop'),
  };
}
