import { z } from 'zod';
import { DEFAULT_PORTS, envBool, envEncryptionKeys, envInt, envSecret, type EncryptionKey } from '@lore/runtime';
import { invalidCidrs } from './domain/network';
import { allowLoopbackSetting, refuseLoopbackInProduction } from './webhooks/config';

/** Limits of one plan. Absent numbers mean "no limit". */
export interface PlanLimits {
  requests_per_month?: number;
  max_projects?: number;
  max_keys?: number;
}

export const DEFAULT_PLANS: Record<string, PlanLimits> = {
  free: { requests_per_month: 100_000, max_projects: 3, max_keys: 5 },
  standard: { requests_per_month: 10_000_000, max_projects: 100, max_keys: 100 },
  unlimited: {},
};

export type UpstreamName = 'graph' | 'core' | 'agents' | 'mcp';

/** Everything the gateway needs to know, already validated. The embedded mode builds one with `gatewayConfig()`. */
export interface GatewayConfig {
  /** Forwarded-for headers are believed only from these CIDR ranges. */
  trustedProxies: string[];
  /** Default per-key rate limit (a key may carry its own). */
  rateLimit: { perSecond: number; burst: number };
  /** Login attempts per e-mail address and per client address. */
  loginRateLimit: { perSecond: number; burst: number };
  /**
   * Chat messages (spec 2's "message rate limits", docs/core.md): per minute per caller, per user group (each group a
   * signed-in user belongs to has its own budget) and per tenant; 0 turns a limit off (the default).
   */
  chatMessageLimits: { perUserPerMinute: number; perGroupPerMinute: number; perTenantPerMinute: number };
  cacheTtlMs: { credentials: number; tenants: number; hosts: number };
  sessions: { secret: string; ttlSeconds: number; refreshTtlSeconds: number; cookieSecure: boolean };
  oauth: { tokenTtlSeconds: number };
  rotation: { defaultOverlapSeconds: number; maxOverlapSeconds: number };
  ephemeralTtlSeconds: number;
  plans: Record<string, PlanLimits>;
  defaultPlan: string;
  /** Where forwarded surfaces go: `http://host:port` or `unix:/path/to.sock`. A missing upstream means 404. */
  upstreams: Partial<Record<UpstreamName, string>>;
  proxy: {
    connectTimeoutMs: number;
    responseTimeoutMs: number;
    idleTimeoutMs: number;
    maxBodyBytes: number;
    /** How often open forwarded streams and sockets are checked against their credential's revocation (default 10 s). */
    revocationRecheckMs?: number;
  };
  /** Largest JSON body of the gateway's own routes. */
  bodyLimitBytes: number;
  /** The internal admin API's service credential; null disables the admin API. */
  adminToken: string | null;
  /** Primary memories created by the gateway get `<memory_id>.<memoryBaseDomain>` as hostname. */
  memoryBaseDomain: string;
  /** Name of the cookie that may carry an API key on the core and agents surfaces. */
  apiKeyCookie: string;
  /**
   * Key ring sealing secrets the gateway stores and must read back (webhook signing secrets): the first key seals,
   * every key opens. The webhooks worker needs the same keys. A secret, so there is no default.
   */
  encryptionKeys: EncryptionKey[];
  /** `LORE_WEBHOOKS_ALLOW_LOOPBACK`: subscriptions may name loopback receivers (never in production). */
  webhooks: { allowLoopback: boolean };
}

export const SESSION_TTL_SECONDS = 15 * 24 * 3600;
export const REFRESH_TTL_SECONDS = 30 * 24 * 3600;

export type GatewayConfigInput = Partial<Omit<GatewayConfig, 'sessions' | 'encryptionKeys'>> & {
  sessions: { secret: string } & Partial<GatewayConfig['sessions']>;
  encryptionKeys: EncryptionKey[];
};

export function gatewayConfig(overrides: GatewayConfigInput): GatewayConfig {
  return {
    trustedProxies: [],
    rateLimit: { perSecond: 100, burst: 200 },
    loginRateLimit: { perSecond: 1, burst: 10 },
    chatMessageLimits: { perUserPerMinute: 0, perGroupPerMinute: 0, perTenantPerMinute: 0 },
    cacheTtlMs: { credentials: 30_000, tenants: 5_000, hosts: 5_000 },
    oauth: { tokenTtlSeconds: 3600 },
    rotation: { defaultOverlapSeconds: 3600, maxOverlapSeconds: 30 * 86_400 },
    ephemeralTtlSeconds: 86_400,
    plans: DEFAULT_PLANS,
    defaultPlan: 'unlimited',
    upstreams: {},
    proxy: { connectTimeoutMs: 5_000, responseTimeoutMs: 60_000, idleTimeoutMs: 300_000, maxBodyBytes: 100 * 1024 * 1024 },
    bodyLimitBytes: 1024 * 1024,
    adminToken: null,
    memoryBaseDomain: 'memory.localhost',
    apiKeyCookie: 'lore_api_key',
    webhooks: { allowLoopback: false },
    ...overrides,
    sessions: { ...{ ttlSeconds: SESSION_TTL_SECONDS, refreshTtlSeconds: REFRESH_TTL_SECONDS, cookieSecure: true }, ...overrides.sessions },
  };
}

const upstreamUrl = z
  .string()
  .optional()
  .refine((v) => v === undefined || v === '' || /^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(v) || /^unix:\/.+/.test(v), {
    message: 'must be http://host:port or unix:/path/to.sock',
  })
  .transform((v) => (v ? v : undefined));

const cidrList = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const list = (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    const bad = invalidCidrs(list);
    if (bad.length > 0) {
      ctx.addIssue({ code: 'custom', message: `invalid CIDR ranges: ${bad.join(', ')}` });
      return z.NEVER;
    }
    return list;
  });

const plansJson = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (!v) return DEFAULT_PLANS;
    try {
      const parsed = z
        .record(z.string().regex(/^[a-z0-9_-]{1,40}$/), z.object({ requests_per_month: z.number().int().positive().optional(), max_projects: z.number().int().positive().optional(), max_keys: z.number().int().positive().optional() }).strict())
        .parse(JSON.parse(v));
      return parsed as Record<string, PlanLimits>;
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `must be a JSON object of plans: ${(err as Error).message.slice(0, 200)}` });
      return z.NEVER;
    }
  });

/** The gateway process's environment, parsed once by main.ts. */
export const gatewayEnvSchema = z
  .object({
    NODE_ENV: z.string().optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    GATEWAY_HOST: z.string().default('0.0.0.0'),
    GATEWAY_PORT: envInt(DEFAULT_PORTS.gateway, 0, 65535),
    GATEWAY_ADMIN_HOST: z.string().default('0.0.0.0'),
    GATEWAY_ADMIN_PORT: envInt(DEFAULT_PORTS.gatewayAdmin, 0, 65535),
    GATEWAY_OPS_PORT: envInt(DEFAULT_PORTS.gatewayOps, 0, 65535),
    LORE_DATABASE_URL: z.string({ error: 'is required' }).min(1),
    LORE_DATABASE_OWNER_URL: z.string().optional(),
    LORE_REDIS_URL: z.string({ error: 'is required' }).min(1),
    GATEWAY_REDIS_PREFIX: z.string().default('lore:gw:'),
    LORE_IDENTITY_SECRET: envSecret(32),
    GATEWAY_SESSION_SECRET: envSecret(32),
    GATEWAY_ADMIN_TOKEN: envSecret(24),
    LORE_ENCRYPTION_KEYS: envEncryptionKeys(),
    GATEWAY_COOKIE_SECURE: envBool(true),
    GATEWAY_TRUSTED_PROXIES: cidrList,
    GATEWAY_RATE_LIMIT_PER_SECOND: envInt(100, 1, 1_000_000),
    GATEWAY_RATE_LIMIT_BURST: envInt(200, 1, 10_000_000),
    GATEWAY_CHAT_MESSAGES_PER_USER_PER_MINUTE: envInt(0, 0, 1_000_000),
    GATEWAY_CHAT_MESSAGES_PER_GROUP_PER_MINUTE: envInt(0, 0, 100_000_000),
    GATEWAY_CHAT_MESSAGES_PER_TENANT_PER_MINUTE: envInt(0, 0, 100_000_000),
    GATEWAY_CREDENTIAL_CACHE_MS: envInt(30_000, 0, 300_000),
    GATEWAY_TENANT_CACHE_MS: envInt(5_000, 0, 300_000),
    GATEWAY_ROTATION_OVERLAP_SECONDS: envInt(3600, 0, 30 * 86_400),
    GATEWAY_PLANS: plansJson,
    GATEWAY_DEFAULT_PLAN: z.string().default('unlimited'),
    GATEWAY_UPSTREAM_GRAPH: upstreamUrl,
    GATEWAY_UPSTREAM_CORE: upstreamUrl,
    GATEWAY_UPSTREAM_AGENTS: upstreamUrl,
    GATEWAY_UPSTREAM_MCP: upstreamUrl,
    GATEWAY_PROXY_CONNECT_TIMEOUT_MS: envInt(5_000, 1, 600_000),
    GATEWAY_PROXY_RESPONSE_TIMEOUT_MS: envInt(60_000, 1, 3_600_000),
    GATEWAY_PROXY_IDLE_TIMEOUT_MS: envInt(300_000, 1, 86_400_000),
    GATEWAY_PROXY_REVOCATION_RECHECK_MS: envInt(10_000, 100, 300_000),
    GATEWAY_PROXY_MAX_BODY_BYTES: envInt(100 * 1024 * 1024, 1, 10 * 1024 * 1024 * 1024),
    GATEWAY_MEMORY_BASE_DOMAIN: z.string().regex(/^[a-z0-9.-]+$/).default('memory.localhost'),
    GATEWAY_RUN_MIGRATIONS: envBool(true),
    LORE_WEBHOOKS_ALLOW_LOOPBACK: allowLoopbackSetting,
  })
  .superRefine((env, ctx) => {
    refuseLoopbackInProduction(env, ctx);
    if (!(env.GATEWAY_DEFAULT_PLAN in env.GATEWAY_PLANS)) {
      ctx.addIssue({ code: 'custom', path: ['GATEWAY_DEFAULT_PLAN'], message: `must name one of the plans (${Object.keys(env.GATEWAY_PLANS).join(', ')})` });
    }
  });

export type GatewayEnv = z.infer<typeof gatewayEnvSchema>;

export function configFromEnv(env: GatewayEnv): GatewayConfig {
  return gatewayConfig({
    trustedProxies: env.GATEWAY_TRUSTED_PROXIES,
    rateLimit: { perSecond: env.GATEWAY_RATE_LIMIT_PER_SECOND, burst: env.GATEWAY_RATE_LIMIT_BURST },
    chatMessageLimits: {
      perUserPerMinute: env.GATEWAY_CHAT_MESSAGES_PER_USER_PER_MINUTE,
      perGroupPerMinute: env.GATEWAY_CHAT_MESSAGES_PER_GROUP_PER_MINUTE,
      perTenantPerMinute: env.GATEWAY_CHAT_MESSAGES_PER_TENANT_PER_MINUTE,
    },
    cacheTtlMs: { credentials: env.GATEWAY_CREDENTIAL_CACHE_MS, tenants: env.GATEWAY_TENANT_CACHE_MS, hosts: env.GATEWAY_TENANT_CACHE_MS },
    sessions: { secret: env.GATEWAY_SESSION_SECRET, cookieSecure: env.GATEWAY_COOKIE_SECURE },
    rotation: { defaultOverlapSeconds: env.GATEWAY_ROTATION_OVERLAP_SECONDS, maxOverlapSeconds: 30 * 86_400 },
    plans: env.GATEWAY_PLANS,
    defaultPlan: env.GATEWAY_DEFAULT_PLAN,
    upstreams: {
      ...(env.GATEWAY_UPSTREAM_GRAPH ? { graph: env.GATEWAY_UPSTREAM_GRAPH } : {}),
      ...(env.GATEWAY_UPSTREAM_CORE ? { core: env.GATEWAY_UPSTREAM_CORE } : {}),
      ...(env.GATEWAY_UPSTREAM_AGENTS ? { agents: env.GATEWAY_UPSTREAM_AGENTS } : {}),
      ...(env.GATEWAY_UPSTREAM_MCP ? { mcp: env.GATEWAY_UPSTREAM_MCP } : {}),
    },
    proxy: {
      connectTimeoutMs: env.GATEWAY_PROXY_CONNECT_TIMEOUT_MS,
      responseTimeoutMs: env.GATEWAY_PROXY_RESPONSE_TIMEOUT_MS,
      idleTimeoutMs: env.GATEWAY_PROXY_IDLE_TIMEOUT_MS,
      revocationRecheckMs: env.GATEWAY_PROXY_REVOCATION_RECHECK_MS,
      maxBodyBytes: env.GATEWAY_PROXY_MAX_BODY_BYTES,
    },
    adminToken: env.GATEWAY_ADMIN_TOKEN,
    memoryBaseDomain: env.GATEWAY_MEMORY_BASE_DOMAIN,
    encryptionKeys: env.LORE_ENCRYPTION_KEYS,
    webhooks: { allowLoopback: env.LORE_WEBHOOKS_ALLOW_LOOPBACK },
  });
}
