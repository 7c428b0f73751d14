import { DEFAULT_PORTS, blobStoreEnv, checkBlobStoreEnv, envBool, envInt, envKafkaPrefix, envSecret } from '@lore/runtime';
import { z } from 'zod';
import { parseEgressProxies } from './domain/egress';

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

/** SearXNG's address (its JSON API): the default `WebSearch` provider. Without it lists come from the directory and the tenant's knowledge. */
export const searxngUrlSetting = optionalString.refine((v) => v === undefined || /^https?:\/\/\S+$/.test(v), { message: 'must be an http(s) URL' });

/**
 * The API's limits a user sets: the CSV import's (docs/agents.md, "CSV import"), running generic workflows per
 * service, the live page's token lifetime. Exported so embedded mode reads the same names, ranges and defaults.
 */
export const agentsApiLimitsEnv = {
  // The CSV import: the largest file, and the most columns and rows one may hold.
  LORE_AGENTS_CSV_MAX_BYTES: envInt(50 * 1024 * 1024, 1024, 256 * 1024 * 1024),
  LORE_AGENTS_CSV_MAX_COLUMNS: envInt(200, 1, 2_000),
  LORE_AGENTS_CSV_MAX_ROWS: envInt(200_000, 1, 5_000_000),
  // The generic workflow API (docs/agents.md, "Generic workflow API"): running workflows one (tenant, serviceId) may have.
  LORE_AGENTS_WORKFLOW_MAX_PER_SERVICE: envInt(10, 1, 10_000),
  /** How long a deep search's live_url (its signed token) opens the live page, in seconds. */
  LORE_AGENTS_LIVE_URL_TTL_S: envInt(3_600, 60, 86_400),
};

/**
 * The search workflows' settings (docs/agents.md, "Workflows", "Credits"): claims, the sweep, runs at once, rows per
 * checkpoint, budgets and credit prices (whole credits, 0: free). Exported so embedded mode's worker reads them too.
 */
export const agentsWorkflowEnv = {
  LORE_AGENTS_WORKFLOW_LEASE_MS: envInt(30_000, 1_000, 600_000),
  LORE_AGENTS_WORKFLOW_HEARTBEAT_MS: envInt(5_000, 100, 300_000),
  LORE_AGENTS_WORKFLOW_SWEEP_MS: envInt(10_000, 500, 600_000),
  LORE_AGENTS_WORKFLOW_MAX_RUNNING: envInt(8, 1, 256),
  LORE_AGENTS_WORKFLOW_BATCH_ROWS: envInt(5, 1, 100),
  LORE_AGENTS_BUDGET_FETCHES: envInt(200, 1, 100_000),
  LORE_AGENTS_BUDGET_WALL_MS: envInt(600_000, 1_000, 86_400_000),
  LORE_AGENTS_BUDGET_MODEL_TOKENS: envInt(50_000, 1, 10_000_000),
  LORE_AGENTS_CREDITS_PER_FETCH: envInt(1, 0, 1_000_000),
  LORE_AGENTS_CREDITS_PER_ROW: envInt(1, 0, 1_000_000),
  LORE_AGENTS_CREDITS_PER_1000_TOKENS: envInt(1, 0, 1_000_000),
};

/** The environment of the agents processes (API and worker), parsed once by their `main`. Secrets have no default. */
export const agentsConfigSchema = z.object({
  LORE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  NODE_ENV: z.string().default('development'),
  LORE_AGENTS_HOST: z.string().default('0.0.0.0'),
  LORE_AGENTS_PORT: envInt(DEFAULT_PORTS.agents, 0, 65535),
  LORE_AGENTS_WORKER_PORT: envInt(DEFAULT_PORTS.agentsWorker, 0, 65535),
  LORE_DATABASE_URL: z.string({ error: 'is required' }).min(1),
  LORE_DATABASE_OWNER_URL: optionalString,
  LORE_REDIS_URL: optionalString,
  LORE_IDENTITY_SECRET: envSecret(32),
  LORE_AGENTS_MIGRATE: envBool(false),
  // Connections of the process's database pool (docs/agents.md, "Benchmarks": live stream frames hold none).
  LORE_AGENTS_DB_POOL_MAX: envInt(10, 1, 200),
  LORE_AGENTS_BODY_LIMIT_BYTES: envInt(1024 * 1024, 1024, 64 * 1024 * 1024),
  ...agentsApiLimitsEnv,
  // The worker: Kafka and its consumer group.
  LORE_KAFKA_BROKERS: optionalString,
  LORE_KAFKA_PREFIX: envKafkaPrefix(),
  /** Prefix of the progress streams' Redis keys: the API and the worker of one install share it (docs/agents.md, "Workflows"). */
  LORE_AGENTS_REDIS_PREFIX: z.string().max(64).regex(/^[A-Za-z0-9._:-]*$/, 'letters, digits and . _ : - only').default('lore:agents:'),
  LORE_AGENTS_RELAY: envBool(true),
  LORE_AGENTS_CONSUMER_GROUP: z.string().min(1).default('agents-worker'),
  ...agentsWorkflowEnv,
  LORE_AGENTS_SEARXNG_URL: searxngUrlSetting,
  /** The graph service's memory API (`http(s)://` or `unix:/path`): the tenant's knowledge. Without it lists read no knowledge. */
  LORE_AGENTS_GRAPH_URL: optionalString.refine((v) => v === undefined || /^(?:https?:\/\/\S+|unix:\/\S+)$/.test(v), { message: 'must be an http(s) URL or unix:/path' }),
  /**
   * Egress proxies by country (docs/agents.md, "Egress proxies"): `de=http://proxy-de:3128,fr=http://user:pw@proxy-fr:3128`
   * or a JSON object; sessions started with `proxy: true` read pages through their `proxy_country_code`'s proxy.
   */
  LORE_AGENTS_EGRESS_PROXIES: optionalString,
  /** Web reads (pages, company overview) may reach loopback addresses (local testing only; refused in production). */
  LORE_AGENTS_ALLOW_LOOPBACK: envBool(false),
  LORE_AI_LLM_BASE_URL: optionalString.refine((v) => v === undefined || /^https?:\/\/\S+$/.test(v), { message: 'must be an http(s) URL' }),
  LORE_AI_LLM_MODEL: optionalString,
  LORE_AI_LLM_API_KEY: optionalString,
  LORE_AI_LLM_TIMEOUT_MS: envInt(60_000, 100, 600_000),
  LORE_AI_LLM_RETRIES: envInt(2, 0, 10),
  /** Where CSV imports and session uploads are kept: PostgreSQL (default) or an S3-compatible bucket. */
  ...blobStoreEnv,
}).superRefine((c, ctx) => {
  checkBlobStoreEnv(c, ctx);
  for (const problem of parseEgressProxies(c.LORE_AGENTS_EGRESS_PROXIES).problems) ctx.addIssue({ code: 'custom', path: ['LORE_AGENTS_EGRESS_PROXIES'], message: problem });
  if (c.LORE_AI_LLM_BASE_URL && !c.LORE_AI_LLM_MODEL) ctx.addIssue({ code: 'custom', path: ['LORE_AI_LLM_MODEL'], message: 'is required with LORE_AI_LLM_BASE_URL' });
  if (c.NODE_ENV === 'production' && c.LORE_AGENTS_ALLOW_LOOPBACK) {
    ctx.addIssue({ code: 'custom', path: ['LORE_AGENTS_ALLOW_LOOPBACK'], message: 'opens web reads to this machine and is refused when NODE_ENV=production' });
  }
});

export type AgentsConfig = z.infer<typeof agentsConfigSchema>;

/** The values of `agentsApiLimitsEnv`, in any configuration that spreads it. */
export type AgentsApiLimitsConfig = z.infer<z.ZodObject<typeof agentsApiLimitsEnv>>;
/** The values of `agentsWorkflowEnv`, in any configuration that spreads it. */
export type AgentsWorkflowConfig = z.infer<z.ZodObject<typeof agentsWorkflowEnv>>;

/** The CSV import limits a deployment sets (the rest keep `DEFAULT_CSV_IMPORT`). */
export function csvImportFrom(c: AgentsApiLimitsConfig): { maxBytes: number; maxColumns: number; maxRows: number } {
  return { maxBytes: c.LORE_AGENTS_CSV_MAX_BYTES, maxColumns: c.LORE_AGENTS_CSV_MAX_COLUMNS, maxRows: c.LORE_AGENTS_CSV_MAX_ROWS };
}
