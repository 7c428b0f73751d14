import Router from '@koa/router';
import { createHttpApp, notFoundFallback, type IdentitySigner, type LoreApp, type Logger } from '@lore/runtime';
import type { Registry } from 'prom-client';
import type { MemoryDeps } from './application/context';
import { contradictionRoutes } from './routes/contradictions/contradictions';
import { identityMiddleware, type GraphState } from './routes/context';
import { documentRoutes } from './routes/documents/documents';
import { healthRoutes } from './routes/health/health';
import { ingestRoutes } from './routes/ingest/ingest';
import { reviewRoutes } from './routes/review/review';
import { searchRoutes } from './routes/search/search';
import { uploadRoutes } from './routes/uploads/uploads';
import { vaultRoutes } from './routes/vaults/vaults';

/** Every memory route lives under this prefix, exactly as the gateway forwards it. */
export const MEMORY_PREFIX = '/api/v1/memory';

export interface GraphAppOptions {
  memory: MemoryDeps;
  signer: IdentitySigner;
  logger: Logger;
  metrics: Registry;
  bodyLimitBytes: number;
}

export function createGraphApp(options: GraphAppOptions): LoreApp {
  const app = createHttpApp({ service: 'graph', logger: options.logger, metrics: options.metrics, bodyLimitBytes: options.bodyLimitBytes });
  app.use(notFoundFallback());
  const api = new Router<GraphState>({ prefix: MEMORY_PREFIX });
  api.use(identityMiddleware(options.signer));
  const deps = { memory: options.memory };
  for (const r of [ingestRoutes, searchRoutes, vaultRoutes, documentRoutes, reviewRoutes, contradictionRoutes, healthRoutes, uploadRoutes]) {
    const router = r(deps);
    api.use(router.routes(), router.allowedMethods());
  }
  app.use(api.routes());
  return app;
}
