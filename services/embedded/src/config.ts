import { resolve } from 'node:path';
import { z } from 'zod';
import { envInt } from '@lore/runtime';
import { allowLoopbackSetting, refuseLoopbackInProduction, retentionDaysSetting } from '@lore/gateway';
import { agentsApiLimitsEnv, agentsWorkflowEnv, csvImportFrom, runSettingsFrom, searxngUrlSetting, type RunSettings } from '@lore/agents';
import { connectorFileConfig, coreFileEnv, coreIndexerEnv, googleEndpointSetting, projectFileConfig } from '@lore/core';

/** Embedded mode's environment. Everything has a default: the newcomer's first minute needs no setup. */
export const embeddedEnvSchema = z.object({
  PORT: envInt(8080, 0, 65535),
  LORE_HOST: z.string().default('127.0.0.1'),
  /** Probes and metrics, on their own port so the public port keeps no unversioned routes; 0 turns them off. */
  LORE_OPS_PORT: envInt(9090, 0, 65535),
  /** The gateway's internal admin API (tenants, users, keys), always on 127.0.0.1 only; 0 turns it off. */
  LORE_ADMIN_PORT: envInt(9081, 0, 65535),
  LORE_DATA_DIR: z
    .string()
    .default('.lore')
    .transform((p) => resolve(p)),
  LORE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** OCR of images and scanned PDFs (tesseract.js, English); `false` skips it for a lighter process. */
  LORE_OCR: z.enum(['true', 'false']).default('true'),
  /**
   * Memory embeddings: `auto` uses the local model (all-MiniLM-L6-v2) only if `scripts/fetch-model.sh` already
   * put it in the cache (a first start never waits for a download), else the hashed embedder.
   */
  LORE_EMBEDDER: z.enum(['auto', 'hashed', 'local-model']).default('auto'),
  /** The local model's folder; default `$LORE_CACHE_DIR/models/all-minilm-l6-v2-int8-1.0.0`. */
  LORE_EMBEDDER_MODEL_DIR: z
    .string()
    .optional()
    .transform((p) => (p ? resolve(p) : undefined)),
  NODE_ENV: z.string().optional(),
  /** `true`: webhook subscriptions may name receivers on this machine (docs/webhooks.md); refused in production. */
  LORE_WEBHOOKS_ALLOW_LOOPBACK: allowLoopbackSetting,
  LORE_WEBHOOKS_RETENTION_DAYS: retentionDaysSetting,
  /** `true`: web and Drive connectors may read this machine (docs/core.md, "Indexing"); refused in production. */
  LORE_CONNECTORS_ALLOW_LOOPBACK: allowLoopbackSetting,
  /**
   * Google's Drive API and token endpoints for the Drive source (a proxy, a loopback Drive), as the cluster's core
   * worker reads them (docs/configuration.md); default Google's.
   */
  LORE_CONNECTORS_GOOGLE_API_URL: googleEndpointSetting,
  LORE_CONNECTORS_GOOGLE_TOKEN_URL: googleEndpointSetting,
  /** `true`: list building and company overview may read this machine's web pages (docs/agents.md); refused in production. */
  LORE_AGENTS_ALLOW_LOOPBACK: allowLoopbackSetting,
  /** A SearXNG instance (its JSON API) list building searches the web with; without one lists come from the directory. */
  LORE_AGENTS_SEARXNG_URL: searxngUrlSetting,
  /**
   * The agents' and core's settings a user of embedded mode sets as on a cluster, with the definitions (names, ranges,
   * defaults) of the processes that read them there (before 2026-11-30 embedded mode ignored them):
   * the search workflows' runs at once, budgets and credit prices (the agents worker's); the CSV import limits,
   * generic workflows per service and the live page's token lifetime (the agents API's); the project and connector
   * file upload limits (core's); the connector scheduler's interval and the indexer's runs at once (the core worker's).
   */
  ...agentsWorkflowEnv,
  ...agentsApiLimitsEnv,
  ...coreFileEnv,
  ...coreIndexerEnv,
}).superRefine((env, ctx) => {
  refuseLoopbackInProduction(env, ctx);
  if (env.NODE_ENV === 'production' && env.LORE_CONNECTORS_ALLOW_LOOPBACK) {
    ctx.addIssue({ code: 'custom', path: ['LORE_CONNECTORS_ALLOW_LOOPBACK'], message: 'opens connector reads to this machine and is refused when NODE_ENV=production' });
  }
  if (env.NODE_ENV === 'production' && env.LORE_AGENTS_ALLOW_LOOPBACK) {
    ctx.addIssue({ code: 'custom', path: ['LORE_AGENTS_ALLOW_LOOPBACK'], message: 'opens web reads to this machine and is refused when NODE_ENV=production' });
  }
});

export type EmbeddedConfig = z.infer<typeof embeddedEnvSchema>;

/**
 * Where the Drive source calls Google (its API and token endpoints), only those set: embedded mode passes them to its
 * indexer as the core worker does (before 2026-11-30 it ignored them and always called Google).
 */
export function googleEndpoints(config: Pick<EmbeddedConfig, 'LORE_CONNECTORS_GOOGLE_API_URL' | 'LORE_CONNECTORS_GOOGLE_TOKEN_URL'>): { apiBaseUrl?: string; tokenUrl?: string } {
  return {
    ...(config.LORE_CONNECTORS_GOOGLE_API_URL ? { apiBaseUrl: config.LORE_CONNECTORS_GOOGLE_API_URL } : {}),
    ...(config.LORE_CONNECTORS_GOOGLE_TOKEN_URL ? { tokenUrl: config.LORE_CONNECTORS_GOOGLE_TOKEN_URL } : {}),
  };
}

/** What embedded mode's agents worker runs with: the agents worker's settings, from the same variables. */
export function agentsWorkerSettings(config: EmbeddedConfig): { settings: RunSettings; maxRunning: number; sweepIntervalMs: number } {
  return { settings: runSettingsFrom(config), maxRunning: config.LORE_AGENTS_WORKFLOW_MAX_RUNNING, sweepIntervalMs: config.LORE_AGENTS_WORKFLOW_SWEEP_MS };
}

/** The agents API's limits in embedded mode, from the variables the cluster's agents API reads. */
export function agentsServiceSettings(config: EmbeddedConfig): { csvImport: ReturnType<typeof csvImportFrom>; genericWorkflows: { maxRunningPerService: number }; liveUrlTtlSeconds: number } {
  return {
    csvImport: csvImportFrom(config),
    genericWorkflows: { maxRunningPerService: config.LORE_AGENTS_WORKFLOW_MAX_PER_SERVICE },
    liveUrlTtlSeconds: config.LORE_AGENTS_LIVE_URL_TTL_S,
  };
}

/** Core's upload limits in embedded mode, from the variables the cluster's core reads. */
export function coreFileSettings(config: EmbeddedConfig): { projectFiles: ReturnType<typeof projectFileConfig>; connectorFiles: ReturnType<typeof connectorFileConfig> } {
  return { projectFiles: projectFileConfig(config), connectorFiles: connectorFileConfig(config) };
}
