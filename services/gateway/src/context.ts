import { SecretBox, counterOn, type Db, type IdentitySigner, type Logger } from '@lore/runtime';
import type { Counter, Registry } from 'prom-client';
import type { GatewayConfig, PlanLimits } from './config';
import type { GatewayState } from './state/gateway-state';
import { TtlCache } from './auth/ttl-cache';
import type { KeyAuthRow } from './store/api-keys';
import type { OauthTokenAuthRow } from './store/oauth';
import type { Tenant } from './store/tenants';
import type { Workspace } from './store/workspaces';
import { parseCidrList, type Cidr } from './domain/network';

/** What the gateway was given: the ports and the validated configuration. */
export interface GatewayDeps {
  db: Db;
  state: GatewayState;
  logger: Logger;
  metrics: Registry;
  signer: IdentitySigner;
  config: GatewayConfig;
}

export interface TenantContext {
  tenant: Tenant;
  workspaces: Map<string, Workspace>;
}

export type CachedCredential = { kind: 'key'; row: KeyAuthRow; ipAllowlist: Cidr[] } | { kind: 'oauth'; row: OauthTokenAuthRow; ipAllowlist: Cidr[] };

export interface GatewayMetrics {
  authDecisions: Counter<'outcome'>;
  rateLimitDecisions: Counter<'decision'>;
  /** Pre-bound children for the hot path (no label hashing per request). */
  authOk: { inc(): void };
  rateAllowed: { inc(): void };
  upstreamErrors: Counter<'upstream' | 'kind'>;
}

/** The deps plus the process-local caches and metrics every part of the gateway shares. */
export interface GatewayContext extends GatewayDeps {
  caches: {
    credentials: TtlCache<CachedCredential | null>;
    tenants: TtlCache<TenantContext | null>;
    hosts: TtlCache<{ tenant_id: string; memory_id: string; workspace_id: string } | null>;
    memories: TtlCache<{ memory_id: string; workspace_id: string } | null>;
  };
  trustedProxies: Cidr[];
  gatewayMetrics: GatewayMetrics;
  /** Seals and opens secrets stored in the database (webhook signing secrets) with `config.encryptionKeys`. */
  secretBox: SecretBox;
  /** Last epoch seen from the shared state; a change flushes the credential cache. */
  epoch: { value: string | null };
}

function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: L[]): Counter<L> {
  return counterOn(registry, { name, help, labelNames });
}

function metricsFor(registry: Registry): GatewayMetrics {
  const authDecisions = counter(registry, 'lore_gateway_auth_decisions_total', 'Authentication outcomes by result', ['outcome']);
  const rateLimitDecisions = counter(registry, 'lore_gateway_rate_limit_decisions_total', 'Rate-limit decisions', ['decision']);
  return {
    authDecisions,
    rateLimitDecisions,
    authOk: authDecisions.labels('ok'),
    rateAllowed: rateLimitDecisions.labels('allowed'),
    upstreamErrors: counter(registry, 'lore_gateway_upstream_errors_total', 'Forwarding failures by upstream and kind', ['upstream', 'kind']),
  };
}

export function buildContext(deps: GatewayDeps): GatewayContext {
  const c = deps.config.cacheTtlMs;
  return {
    ...deps,
    // Entries are served up to one more lifetime while a single background load refreshes them (see TtlCache).
    caches: {
      credentials: new TtlCache(c.credentials, 50_000, Date.now, c.credentials),
      tenants: new TtlCache(c.tenants, 10_000, Date.now, c.tenants),
      hosts: new TtlCache(c.hosts, 10_000, Date.now, c.hosts),
      memories: new TtlCache(c.tenants, 50_000, Date.now, c.tenants),
    },
    trustedProxies: parseCidrList(deps.config.trustedProxies),
    gatewayMetrics: metricsFor(deps.metrics),
    secretBox: new SecretBox(deps.config.encryptionKeys),
    epoch: { value: null },
  };
}

export function planOf(ctx: GatewayContext, tenant: Tenant): PlanLimits {
  return ctx.config.plans[tenant.plan] ?? ctx.config.plans[ctx.config.defaultPlan] ?? {};
}

/** How long a revocation record must outlive any cached copy of a credential on any replica. */
export function revocationRecordTtlMs(ctx: GatewayContext, extraMs = 0): number {
  return extraMs + Math.max(86_400_000, 10 * ctx.config.cacheTtlMs.credentials);
}
