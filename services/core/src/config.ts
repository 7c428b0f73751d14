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
});

export type CoreConfig = z.infer<typeof coreConfigSchema>;
