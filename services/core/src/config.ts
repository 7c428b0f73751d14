import { DEFAULT_PORTS, blobStoreEnv, checkBlobStoreEnv, envBool, envEncryptionKeys, envInt, envKafkaPrefix, envSecret } from '@lore/runtime';
import { z } from 'zod';

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

/**
 * One of Google's endpoints for the Drive source (its API or token URL): an http(s) URL, empty is unset. Checked at
 * start, so a value without a scheme is refused there (until 2026-11-30 core took any string and the Drive run failed).
 */
export const googleEndpointSetting = optionalString.refine((v) => v === undefined || /^https?:\/\/\S+$/.test(v), { message: 'must be an http(s) URL' });

/**
 * The upload limits a user sets: chat project files (docs/core.md, "Project files") and files uploaded for `file`
 * connectors ("Connector files"). Exported so embedded mode reads the same names, ranges and defaults.
 */
export const coreFileEnv = {
  LORE_CORE_PROJECT_FILE_MAX_BYTES: envInt(20 * 1024 * 1024, 1, 256 * 1024 * 1024),
  LORE_CORE_PROJECT_FILES_PER_UPLOAD: envInt(20, 1, 1_000),
  LORE_CORE_PROJECT_UPLOAD_MAX_BYTES: envInt(50 * 1024 * 1024, 1, 1024 * 1024 * 1024),
  LORE_CORE_PROJECT_MAX_FILES: envInt(100, 1, 100_000),
  LORE_CORE_PROJECT_FILE_WORKERS: envInt(2, 1, 64),
  LORE_CORE_CONNECTOR_FILE_MAX_BYTES: envInt(25 * 1024 * 1024, 1, 256 * 1024 * 1024),
  LORE_CORE_CONNECTOR_FILES_PER_UPLOAD: envInt(50, 1, 1_000),
  LORE_CORE_CONNECTOR_UPLOAD_MAX_BYTES: envInt(50 * 1024 * 1024, 1, 1024 * 1024 * 1024),
};

/** The connector scheduler's interval and the indexer's runs at once: the core worker's, and embedded mode's. */
export const coreIndexerEnv = {
  LORE_CORE_SCHEDULER_INTERVAL_MS: envInt(15_000, 100, 3_600_000),
  LORE_CORE_INDEX_MAX_RUNNING: envInt(8, 1, 64),
};

/** The values of `coreFileEnv`, in any configuration that spreads it. */
export type CoreFileConfig = z.infer<z.ZodObject<typeof coreFileEnv>>;

/** The environment of the core process, parsed once by `main.ts`. Secrets have no default. */
export const coreConfigSchema = z.object({
  LORE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LORE_CORE_HOST: z.string().default('0.0.0.0'),
  LORE_CORE_PORT: envInt(DEFAULT_PORTS.core, 0, 65535),
  LORE_DATABASE_URL: z.string({ error: 'is required' }).min(1),
  LORE_DATABASE_OWNER_URL: optionalString,
  LORE_IDENTITY_SECRET: envSecret(32),
  /** The platform key ring (`id:base64,...`, the first seals): seals connector credentials at rest. */
  LORE_ENCRYPTION_KEYS: envEncryptionKeys(),
  LORE_CORE_MIGRATE: envBool(false),
  LORE_CORE_BODY_LIMIT_BYTES: envInt(1024 * 1024, 1024, 64 * 1024 * 1024),
  /** The memory API chat's internal_search retrieves from (the graph service): `http://host:port` or `unix:/path`. */
  LORE_CORE_GRAPH_URL: z.string({ error: 'is required' }).regex(/^(https?:\/\/\S+|unix:\/\S+)$/, 'must be an http(s) URL or unix:/path'),
  LORE_CORE_GRAPH_TIMEOUT_MS: envInt(10_000, 100, 120_000),
  LORE_CORE_ANSWER_MAX_TOKENS: envInt(800, 16, 32_000),
  LORE_AI_LLM_BASE_URL: optionalString.refine((v) => v === undefined || /^https?:\/\/\S+$/.test(v), { message: 'must be an http(s) URL' }),
  LORE_AI_LLM_MODEL: optionalString,
  LORE_AI_LLM_API_KEY: optionalString,
  LORE_AI_LLM_TIMEOUT_MS: envInt(60_000, 100, 600_000),
  LORE_AI_LLM_RETRIES: envInt(2, 0, 10),
  NODE_ENV: z.string().default('development'),
  // The core worker (connector indexer): Kafka, its probes, its scheduler and what its sources may reach.
  LORE_KAFKA_BROKERS: optionalString,
  LORE_KAFKA_PREFIX: envKafkaPrefix(),
  LORE_CORE_WORKER_PORT: envInt(DEFAULT_PORTS.coreWorker, 0, 65535),
  LORE_CORE_RELAY: envBool(true),
  LORE_CORE_CONSUMER_GROUP: z.string().min(1).default('core-worker'),
  ...coreIndexerEnv,
  LORE_CORE_INDEX_HEARTBEAT_MS: envInt(5_000, 50, 600_000),
  LORE_CORE_INDEX_STALE_MS: envInt(60_000, 200, 86_400_000),
  /** Documents per write to the memory (a run keeps its progress after each write). */
  LORE_CORE_INDEX_BATCH_DOCUMENTS: envInt(64, 1, 100),
  /** Web and Drive connectors may read loopback addresses (local testing only; refused in production). */
  LORE_CONNECTORS_ALLOW_LOOPBACK: envBool(false),
  /** Google's API and token endpoints (a proxy, or a loopback Drive in tests); default Google's. */
  LORE_CONNECTORS_GOOGLE_API_URL: googleEndpointSetting,
  LORE_CONNECTORS_GOOGLE_TOKEN_URL: googleEndpointSetting,
  ...coreFileEnv,
  /** Where project files and connector files are kept: PostgreSQL (default) or an S3-compatible bucket. */
  ...blobStoreEnv,
}).superRefine((c, ctx) => {
  checkBlobStoreEnv(c, ctx);
  if (c.LORE_AI_LLM_BASE_URL && !c.LORE_AI_LLM_MODEL) ctx.addIssue({ code: 'custom', path: ['LORE_AI_LLM_MODEL'], message: 'is required with LORE_AI_LLM_BASE_URL' });
  if (c.NODE_ENV === 'production' && c.LORE_CONNECTORS_ALLOW_LOOPBACK) {
    ctx.addIssue({ code: 'custom', path: ['LORE_CONNECTORS_ALLOW_LOOPBACK'], message: 'opens connector reads to this machine and is refused when NODE_ENV=production' });
  }
  if (c.LORE_CORE_INDEX_STALE_MS <= c.LORE_CORE_INDEX_HEARTBEAT_MS * 2) {
    ctx.addIssue({ code: 'custom', path: ['LORE_CORE_INDEX_STALE_MS'], message: 'must be more than twice LORE_CORE_INDEX_HEARTBEAT_MS' });
  }
});

export type CoreConfig = z.infer<typeof coreConfigSchema>;

/** The project file settings a deployment sets (the rest keep their defaults). */
export function projectFileConfig(c: CoreFileConfig) {
  return {
    limits: {
      maxFileBytes: c.LORE_CORE_PROJECT_FILE_MAX_BYTES,
      maxFilesPerUpload: c.LORE_CORE_PROJECT_FILES_PER_UPLOAD,
      maxUploadBytes: c.LORE_CORE_PROJECT_UPLOAD_MAX_BYTES,
      maxFilesPerProject: c.LORE_CORE_PROJECT_MAX_FILES,
    },
    concurrency: c.LORE_CORE_PROJECT_FILE_WORKERS,
  };
}

/** The limits of uploads for `file` connectors a deployment sets. */
export function connectorFileConfig(c: CoreFileConfig) {
  return {
    limits: {
      maxFileBytes: c.LORE_CORE_CONNECTOR_FILE_MAX_BYTES,
      maxFilesPerUpload: c.LORE_CORE_CONNECTOR_FILES_PER_UPLOAD,
      maxUploadBytes: c.LORE_CORE_CONNECTOR_UPLOAD_MAX_BYTES,
    },
  };
}
