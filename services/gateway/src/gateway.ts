import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import Router from '@koa/router';
import {
  assertAppRole, checkAppRole, createHttpApp, opsRouter, runMigrations, runRuntimeMigrations, RUNTIME_MIGRATIONS, startInBackground, type Lifecycle, type LoreApp,
  type LoreState,
} from '@lore/runtime';
import { buildContext, type GatewayContext, type GatewayDeps } from './context';
import { createPublicApp } from './app';
import type { GatewayRouter } from './http/state';
import { createAdminApp } from './admin/admin-app';
import { sealStoredSecrets } from './webhooks/seal-stored-secrets';
import { upstreamsCheck } from './forward/upstream-health';

/** Folder of the gateway's SQL migrations (also used by the chart's migration job and the embedded mode). */
export const GATEWAY_MIGRATIONS_DIR = join(__dirname, '..', 'migrations');

/**
 * Applies the runtime kit's schema, then the gateway's. The gateway writes to `runtime.outbox` (memory lifecycle
 * messages for the graph, webhook replays), so it needs the runtime schema even where no other service created it.
 * Both sets are idempotent and serialised by an advisory lock. Returns the gateway migrations applied.
 */
export async function migrateGateway(db: GatewayDeps['db']): Promise<string[]> {
  await runRuntimeMigrations(db);
  return runMigrations(db, { schema: 'gateway', dir: GATEWAY_MIGRATIONS_DIR });
}

/** The schemas the gateway and the webhooks worker work in: the application role needs what their migrations grant. */
export const GATEWAY_SCHEMAS = [RUNTIME_MIGRATIONS, { schema: 'gateway', dir: GATEWAY_MIGRATIONS_DIR }];

export interface Gateway {
  /** The public listener's app. Attach `handleUpgrade` to its server's `upgrade` event for websockets. */
  publicApp: LoreApp;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** The internal admin API; serve it on a separate, cluster-internal port. */
  adminApp: LoreApp;
  /** `/livez`, `/readyz`, `/metrics`, when a lifecycle was given. */
  opsApp?: LoreApp;
  context: GatewayContext;
  close(): Promise<void>;
}

export interface CreateGatewayOptions {
  lifecycle?: Lifecycle;
  /**
   * Extra public routes registered after the gateway's own (the embedded mode's status page, the benchmark's
   * unauthenticated twin of the ping). They run through the same pipeline; they are never added from config.
   */
  extraRoutes?: (router: GatewayRouter, context: GatewayContext) => void;
  /** Check every success body of the gateway's own routes against its declared schema (tests; a drift is a 500). */
  checkResponses?: boolean;
  /** Apply pending migrations first (default true). */
  migrate?: boolean;
  /**
   * Report each upstream's `/readyz` in the `upstreams` readiness check (default true). Embedded mode turns it off:
   * its upstreams run in the same process, under the same readiness.
   */
  checkUpstreams?: boolean;
  /**
   * After start, in the background, seal stored webhook secrets that are still plaintext or sealed with an older
   * key (default true; see webhooks/seal-stored-secrets.ts). `close()` ends the pass.
   */
  sealStoredSecrets?: boolean;
}

/** Composes the gateway from its ports; the process (main.ts or the embedded mode) owns the listeners. */
export async function createGateway(deps: GatewayDeps, options: CreateGatewayOptions = {}): Promise<Gateway> {
  if (options.migrate !== false) await migrateGateway(deps.db);
  // Refuse to start when the application role cannot do the work or could escape row-level security.
  await assertAppRole(deps.db, GATEWAY_SCHEMAS);
  const context = buildContext(deps);
  const pub = createPublicApp(context, { extraRoutes: options.extraRoutes, checkResponses: options.checkResponses });
  const adminApp = createAdminApp(context);
  let opsApp: LoreApp | undefined;
  if (options.lifecycle) {
    opsApp = createHttpApp({ service: 'gateway-ops', logger: deps.logger, metrics: deps.metrics });
    const router: Router<LoreState> = opsRouter(options.lifecycle, deps.metrics);
    opsApp.use(router.routes());
    options.lifecycle.addCheck('database', async () => {
      // The start-up check again: a privilege revoked since makes the gateway unready instead of answering 500s.
      const { role, problems } = await checkAppRole(deps.db, GATEWAY_SCHEMAS);
      return { ok: problems.length === 0, details: { role, ...(problems.length > 0 ? { problems } : {}) } };
    });
    options.lifecycle.addCheck('state', async () => {
      await deps.state.ping();
      return { ok: true, details: { kind: deps.state.kind } };
    });
    // Reported, never failing: the gateway's own routes keep serving while a forwarded surface is down.
    if (options.checkUpstreams !== false && pub.upstreams.size > 0) options.lifecycle.addCheck('upstreams', upstreamsCheck(pub.upstreams));
  }
  const sealing =
    options.sealStoredSecrets === false
      ? null
      : startInBackground(deps.logger, 'sealing stored webhook secrets failed; the next start tries again', (signal) =>
          sealStoredSecrets(deps.db, context.secretBox, deps.logger, { signal }),
        );
  return {
    publicApp: pub.app,
    handleUpgrade: pub.handleUpgrade,
    adminApp,
    opsApp,
    context,
    async close() {
      pub.closeUpgraded();
      for (const target of pub.upstreams.values()) target.agent.destroy();
      await sealing?.stop();
    },
  };
}
