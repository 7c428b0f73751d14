import { resolve } from 'node:path';
import { z } from 'zod';
import { envInt } from '@lore/runtime';
import { allowLoopbackSetting, refuseLoopbackInProduction, retentionDaysSetting } from '@lore/gateway';

/** An optional http(s) endpoint; empty is unset. */
const endpointUrl = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v))
  .refine((v) => v === undefined || /^https?:\/\/\S+$/.test(v), { message: 'must be an http(s) URL' });

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
  LORE_CONNECTORS_GOOGLE_API_URL: endpointUrl,
  LORE_CONNECTORS_GOOGLE_TOKEN_URL: endpointUrl,
  /** `true`: list building and company overview may read this machine's web pages (docs/agents.md); refused in production. */
  LORE_AGENTS_ALLOW_LOOPBACK: allowLoopbackSetting,
  /** A SearXNG instance (its JSON API) list building searches the web with; without one lists come from the directory. */
  LORE_AGENTS_SEARXNG_URL: z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v))
    .refine((v) => v === undefined || /^https?:\/\/\S+$/.test(v), { message: 'must be an http(s) URL' }),
  /** How often the connector scheduler looks for due pairs (ms). */
  LORE_CORE_SCHEDULER_INTERVAL_MS: envInt(15_000, 100, 3_600_000),
  LORE_CORE_INDEX_MAX_RUNNING: envInt(8, 1, 64),
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
