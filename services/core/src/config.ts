import { DEFAULT_PORTS, envBool, envEncryptionKeys, envInt, envSecret } from '@lore/runtime';
import { z } from 'zod';

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

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
}).superRefine((c, ctx) => {
  if (c.LORE_AI_LLM_BASE_URL && !c.LORE_AI_LLM_MODEL) ctx.addIssue({ code: 'custom', path: ['LORE_AI_LLM_MODEL'], message: 'is required with LORE_AI_LLM_BASE_URL' });
});

export type CoreConfig = z.infer<typeof coreConfigSchema>;
