import { readFileSync } from 'node:fs';
import { DEFAULT_PORTS, envBool, envEncryptionKeys, envInt, envKafkaPrefix } from '@lore/runtime';
import { z } from 'zod';
import type { WebhooksWorkerConfig } from './worker';

/**
 * `LORE_WEBHOOKS_ALLOW_LOOPBACK=true` lets a developer receive webhooks on their own machine: loopback receivers
 * (127.0.0.0/8, ::1, `localhost`, plain http among them) are accepted when a subscription is created and when it is
 * delivered. It opens loopback only, never private ranges or metadata addresses. The gateway, the webhooks worker
 * and embedded mode read it, and each refuses it when NODE_ENV is production.
 */
export const allowLoopbackSetting = envBool(false);

/** Adds the configuration problem of a loopback setting in production (for the three schemas that read it). */
export function refuseLoopbackInProduction(env: { NODE_ENV?: string | undefined; LORE_WEBHOOKS_ALLOW_LOOPBACK: boolean }, ctx: z.RefinementCtx): void {
  if (env.NODE_ENV === 'production' && env.LORE_WEBHOOKS_ALLOW_LOOPBACK) {
    ctx.addIssue({
      code: 'custom',
      path: ['LORE_WEBHOOKS_ALLOW_LOOPBACK'],
      message: 'opens webhook delivery to this machine and is refused when NODE_ENV=production',
    });
  }
}

/**
 * `LORE_WEBHOOKS_RETENTION_DAYS`: days a settled delivery (succeeded or dead) and its attempts are kept after its
 * last change before the worker's sweep deletes them; 0 keeps them for ever. Delivery history otherwise grows
 * without bound (a few KB per delivery).
 */
export const retentionDaysSetting = envInt(30, 0, 3650);

/**
 * The webhooks worker's environment, parsed once by webhooks-main.ts. The loopback setting and the test-only extra
 * certificate authority are refused outright when NODE_ENV is production, so a mistaken value in a production
 * deployment stops the process instead of opening the internal network to subscribers.
 */
export const webhooksEnvSchema = z
  .object({
    NODE_ENV: z.string().default('development'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    LORE_DATABASE_URL: z.string({ error: 'is required' }).min(1),
    LORE_DATABASE_OWNER_URL: z.string().optional(),
    // The gateway's key ring: it seals the signing secrets, the worker opens them to sign.
    LORE_ENCRYPTION_KEYS: envEncryptionKeys(),
    LORE_KAFKA_BROKERS: z
      .string({ error: 'is required' })
      .min(1)
      .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean)),
    LORE_KAFKA_PREFIX: envKafkaPrefix(),
    WEBHOOKS_OPS_HOST: z.string().default('0.0.0.0'),
    WEBHOOKS_OPS_PORT: envInt(DEFAULT_PORTS.webhooksOps, 0, 65535),
    WEBHOOKS_DELIVERY_TIMEOUT_MS: envInt(5_000, 200, 30_000),
    WEBHOOKS_CONCURRENCY_PER_ENDPOINT: envInt(4, 1, 64),
    WEBHOOKS_DISABLE_AFTER_DEAD_LETTERS: envInt(10, 0, 100_000),
    WEBHOOKS_GROUP_ID_PREFIX: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/).default('lore.webhooks'),
    WEBHOOKS_START_FROM: z.enum(['earliest', 'latest']).default('earliest'),
    WEBHOOKS_KAFKA_PARTITIONS: envInt(0, 0, 1000),
    WEBHOOKS_CONSUMER_CONCURRENCY: envInt(8, 1, 256),
    // How long the broker keeps a silent member in a consumer group; a killed worker's partitions move to the others
    // after this (Kafka's group.min.session.timeout.ms is 6 s by default).
    WEBHOOKS_KAFKA_SESSION_TIMEOUT_MS: envInt(30_000, 6_000, 300_000),
    WEBHOOKS_RUN_MIGRATIONS: envBool(false),
    WEBHOOKS_RUN_OUTBOX_RELAY: envBool(true),
    LORE_WEBHOOKS_ALLOW_LOOPBACK: allowLoopbackSetting,
    LORE_WEBHOOKS_RETENTION_DAYS: retentionDaysSetting,
    WEBHOOKS_TEST_CA_FILE: z.string().optional(),
  })
  .superRefine((env, ctx) => {
    const production = env.NODE_ENV === 'production';
    refuseLoopbackInProduction(env, ctx);
    if (production && env.WEBHOOKS_TEST_CA_FILE) {
      ctx.addIssue({ code: 'custom', path: ['WEBHOOKS_TEST_CA_FILE'], message: 'is a test-only setting and is refused when NODE_ENV=production' });
    }
    if (env.WEBHOOKS_RUN_MIGRATIONS && !env.LORE_DATABASE_OWNER_URL) {
      ctx.addIssue({ code: 'custom', path: ['LORE_DATABASE_OWNER_URL'], message: 'is required when WEBHOOKS_RUN_MIGRATIONS is true' });
    }
  });

export type WebhooksEnv = z.infer<typeof webhooksEnvSchema>;

export function workerConfigFromEnv(env: WebhooksEnv, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): WebhooksWorkerConfig {
  return {
    deliveryTimeoutMs: env.WEBHOOKS_DELIVERY_TIMEOUT_MS,
    concurrencyPerEndpoint: env.WEBHOOKS_CONCURRENCY_PER_ENDPOINT,
    disableAfterDeadLetters: env.WEBHOOKS_DISABLE_AFTER_DEAD_LETTERS,
    groupIdPrefix: env.WEBHOOKS_GROUP_ID_PREFIX,
    startFrom: env.WEBHOOKS_START_FROM,
    maxSubscriptionsPerEvent: 100,
    allowLoopback: env.LORE_WEBHOOKS_ALLOW_LOOPBACK,
    // Kafka keeps every announced attempt until it is made: nothing to announce again.
    recoverOnStart: false,
    retentionDays: env.LORE_WEBHOOKS_RETENTION_DAYS,
    ...(env.WEBHOOKS_TEST_CA_FILE ? { extraCaPem: readFile(env.WEBHOOKS_TEST_CA_FILE) } : {}),
  };
}
