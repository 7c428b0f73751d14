import type { IncomingHttpHeaders } from 'node:http';
import { AppError, CLIENT_ADDRESS_HEADER, type CredentialKind, type Identity } from '@lore/runtime';
import { fromAnotherOrigin } from '../http/origin';
import { digestsEqual, keyTypeOfPrefix, parseCredential, sha256Hex, type ParsedCredential } from '../domain/credentials';
import { addressAllowed, clientAddress, parseCidrList } from '../domain/network';
import { appPermissionDenies, oauthScopesDeny, scopeDenies, type KeyScope, type Module, type Need, type RouteAccess } from '../domain/scope';
import type { CachedCredential, GatewayContext, TenantContext } from '../context';
import { planOf } from '../context';
import { keyByHash } from '../store/api-keys';
import { tokenByHash } from '../store/oauth';
import { tenantContext, tenantMemory } from '../application/tenancy';
import { resolveSession, sessionRefusal } from '../application/identity';
import { creditError, planLimitError } from '../application/billing';
import { credentialCacheKey, invalidateCredential, observeSharedEpoch } from '../application/cache-invalidation';
import type { RateOutcome } from '../state/gateway-state';

/** Where a surface accepts its credential (ARCHITECTURE.md §1). */
export type CredentialSource = 'x-api-key' | 'bearer' | 'cookie' | 'query';

export interface RouteRule {
  module: Module;
  /** `any`: every access level of a key (read, write, read_write) may use the route. */
  access: RouteAccess;
  /** Operation name inside the app, for `app_permissions`. */
  operation: string;
  sources: readonly CredentialSource[];
  /** Bearer session JWTs of signed-in users are accepted too (core and agents surfaces). */
  allowSessions: boolean;
  /** Data-plane routes need credits when the tenant is metered. */
  metered: boolean;
  /**
   * The request counts against the plan's monthly request quota (absent: it does). Only a surface whose work reaches
   * the API through requests of its own, which count, leaves it out (MCP; docs/gateway.md, "Rate limits, plans and
   * credits"). The per-key rate limit applies to every authenticated request whatever this says.
   */
  countsQuota?: boolean;
}

export interface RequestFacts {
  host: string;
  headers: IncomingHttpHeaders;
  remoteAddress: string | undefined;
  query: URLSearchParams;
  requestId: string;
  /** The memory whose own hostname the request came to, if any. */
  hostMemory: { tenant_id: string; memory_id: string; workspace_id: string } | null;
}

export interface Principal {
  credential: CredentialKind;
  tenantId: string;
  /** Key id, OAuth client id or user id. */
  subject: string;
  /**
   * Who the data the credential makes downstream belongs to, the identity's `subject`: a key's lineage (the first
   * key of its rotation chain, so a replacement owns what the keys before it made), else the subject itself.
   */
  owner: string;
  role: string;
  workspaceId: string;
  memoryId: string;
  projectId: string | null;
  /** The workspace the credential is bound to (pinned keys, project keys, mk_ keys); null: the whole tenant. */
  pinnedWorkspaceId: string | null;
  keyScope: KeyScope | null;
  oauthScopes: string[] | null;
  /**
   * A signed-in user's user groups (ids, ascending), read with the account on this request. Empty for API keys and
   * OAuth tokens: a credential belongs to no group (docs/gateway.md, "User groups").
   */
  groups: readonly number[];
  /** A signed-in user's e-mail address; null for keys and OAuth tokens. */
  email: string | null;
  /**
   * Whether the credential may read memory documents: what its key scope, app permissions or OAuth scopes say of a
   * memory search, whatever the route (chat, lists and graphs hand out document content too).
   */
  readsMemory: boolean;
  tenant: TenantContext;
}

/** The groups of every credential that is not a signed-in user's session. */
const NO_GROUPS: readonly number[] = Object.freeze([]);

export interface AuthOutcome {
  principal: Principal;
  /** RateLimit-* headers for the response. */
  headers: Record<string, string>;
  /**
   * When the credential stops working by itself (a key's or an OAuth token's `expires_at`, epoch ms); null when it
   * never does, and for a signed-in user's session. What it has open is closed then (docs/gateway.md, "Revocation").
   */
  expiresAtMs: number | null;
}

const unauthorized = (message: string) => AppError.unauthorized(message);

/** A refusal counted under its outcome (`lore_gateway_auth_decisions_total`), so every failed sign-in shows there. */
function refused(ctx: GatewayContext, outcome: 'missing_credential' | 'malformed_credential' | 'unknown_credential' | 'dead_credential' | 'revoked' | 'invalid_session', message: string): AppError {
  ctx.gatewayMetrics.authDecisions.inc({ outcome });
  return unauthorized(message);
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function cookieValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const raw = header(headers, 'cookie');
  if (!raw || raw.length > 16_384) return undefined;
  for (const part of raw.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return percentDecoded(part.slice(eq + 1).trim());
  }
  return undefined;
}

/** A cookie value percent-decoded; one that is no valid encoding (`%F2%B7`) is kept as sent, a malformed credential (401). */
function percentDecoded(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

type Presented = { kind: 'credential'; parsed: ParsedCredential } | { kind: 'session'; token: string };

/** Finds the credential in the places this surface accepts, or explains why there is none. */
function presentedCredential(ctx: GatewayContext, facts: RequestFacts, rule: RouteRule): Presented {
  const h = facts.headers;
  const candidates: Array<{ value: string; bearer: boolean; cookie?: true }> = [];
  for (const source of rule.sources) {
    if (source === 'x-api-key') {
      const v = header(h, 'x-api-key');
      if (v !== undefined) candidates.push({ value: v.trim(), bearer: false });
    } else if (source === 'bearer') {
      const v = header(h, 'authorization');
      if (v !== undefined) {
        const m = /^Bearer\s+(\S+)\s*$/i.exec(v);
        if (!m) throw refused(ctx, 'malformed_credential', 'the Authorization header must be "Bearer <credential>"');
        candidates.push({ value: m[1]!, bearer: true });
      }
    } else if (source === 'cookie') {
      const v = cookieValue(h, ctx.config.apiKeyCookie);
      if (v !== undefined) candidates.push({ value: v, bearer: false, cookie: true });
    } else if (source === 'query') {
      const v = facts.query.get('api-key');
      if (v !== null) candidates.push({ value: v, bearer: false });
    }
  }
  const first = candidates[0];
  if (!first) {
    if (!rule.sources.includes('bearer') && header(h, 'authorization') !== undefined) {
      throw refused(ctx, 'missing_credential', 'send the API key in the x-api-key header, not in Authorization');
    }
    throw refused(ctx, 'missing_credential', `a credential is required: ${credentialPlaces(rule.sources, ctx.config.apiKeyCookie)}`);
  }
  // A browser sends a cookie with requests other sites make it send (a form posting a file, say): the cookie is
  // taken from the gateway's own origin only, so another site cannot act with a visitor's key (no CSRF).
  if (first.cookie && fromAnotherOrigin(h)) {
    ctx.gatewayMetrics.authDecisions.inc({ outcome: 'denied_403' });
    throw new AppError('FORBIDDEN', `the ${ctx.config.apiKeyCookie} cookie is accepted from this origin only: a request another site makes a browser send cannot use it (send the key in the x-api-key or Authorization header)`);
  }
  const parsed = parseCredential(first.value);
  if (parsed) return { kind: 'credential', parsed };
  if (first.bearer && rule.allowSessions && first.value.split('.').length === 3) return { kind: 'session', token: first.value };
  throw refused(ctx, 'malformed_credential', 'the credential is malformed or mistyped');
}

async function fetchCredential(ctx: GatewayContext, parsed: ParsedCredential, hash: string): Promise<CachedCredential | null> {
  if (parsed.kind === 'key') {
    const row = await keyByHash(ctx.db, hash);
    return row ? { kind: 'key', row, ipAllowlist: parseCidrList(row.ip_allowlist) } : null;
  }
  const row = await tokenByHash(ctx.db, hash);
  return row ? { kind: 'oauth', row, ipAllowlist: parseCidrList(row.ip_allowlist) } : null;
}

/** The record a cache entry or a load returned, if its stored digest really is this secret's (constant time). */
function verifiedCredential(cred: CachedCredential | null, hash: string): CachedCredential | null {
  if (!cred) return null;
  const stored = cred.kind === 'key' ? cred.row.key_hash : cred.row.token_hash;
  return digestsEqual(stored, hash) ? cred : null;
}

async function loadCredential(ctx: GatewayContext, parsed: ParsedCredential, hash: string, useCache: boolean): Promise<CachedCredential | null> {
  const cacheKey = credentialCacheKey(parsed.kind, hash);
  let cred: CachedCredential | null;
  if (useCache) {
    cred = await ctx.caches.credentials.getOrLoad(cacheKey, () => fetchCredential(ctx, parsed, hash));
    // Unknown secrets are not remembered: random guesses must not push real keys out of the cache.
    if (cred === null) invalidateCredential(ctx, parsed.kind, hash);
  } else {
    cred = await fetchCredential(ctx, parsed, hash);
    if (cred) ctx.caches.credentials.set(cacheKey, cred);
  }
  return verifiedCredential(cred, hash);
}

/** Revoked or expired according to the record itself (the database's view, possibly cached). */
function deadReason(cred: CachedCredential, now: number): string | null {
  if (cred.kind === 'key') {
    if (cred.row.revoked_at_ms !== null) return 'the key has been revoked';
    if (cred.row.expires_at_ms !== null && cred.row.expires_at_ms <= now) {
      // Spec 1: the original of a rotation is revoked once the overlap ends.
      return cred.row.replaced_by !== null ? 'the key has been revoked: it was rotated and its overlap has ended' : 'the key has expired';
    }
    return null;
  }
  if (cred.row.client_revoked) return 'the OAuth client has been revoked';
  if (cred.row.expires_at_ms <= now) return 'the access token has expired';
  return null;
}

/** `RateLimit-*` headers of an answer (and `Retry-After` when the bucket is empty). */
export function rateHeaders(rate: RateOutcome | null, perSecond: number): Record<string, string> {
  if (!rate) return {};
  const headers: Record<string, string> = {
    'RateLimit-Limit': String(rate.limit),
    'RateLimit-Remaining': String(rate.remaining),
    'RateLimit-Reset': String(Math.max(0, Math.ceil(rate.resetAfterMs / 1000))),
    'RateLimit-Policy': `${rate.limit};w=${Math.max(1, Math.round(rate.limit / perSecond))}`,
  };
  if (!rate.allowed) headers['Retry-After'] = String(Math.max(1, Math.ceil(rate.retryAfterMs / 1000)));
  return headers;
}

interface Target {
  workspaceId: string;
  memoryId: string;
}

type MemoryParam = { memory_id: string; workspace_id: string } | null;

/**
 * The lookup of the memory a `memory_id` query parameter names (null: not a live memory of this tenant), or
 * undefined when there is no such parameter: most requests have none, and then nothing waits.
 */
function memoryParamLookup(ctx: GatewayContext, tenantId: string, facts: RequestFacts): Promise<MemoryParam> | undefined {
  const memParam = facts.query.get('memory_id');
  if (memParam === null) return undefined;
  return memParam.length <= 128 ? tenantMemory(ctx, tenantId, memParam) : Promise.resolve(null);
}

/**
 * Which workspace and memory the request acts on. The credential's pins come first; `workspace_id` and
 * `memory_id` query parameters may narrow within what the credential reaches. Anything outside it is 404.
 * `memParam` is what `memoryParamLookup` found (undefined: no parameter). A key whose scope names memories and
 * whose request names no place acts in the tenant's active workspace when that workspace's memory is in its scope,
 * else in the first workspace of the tenant whose primary memory it names (`scopedMemories`, in the scope's order):
 * another administrator activating a workspace does not take such a key out of its memories.
 */
function resolveTarget(
  tenant: TenantContext,
  facts: RequestFacts,
  pins: { workspaceId: string | null; memoryId: string | null },
  memParam: MemoryParam | undefined,
  scopedMemories: readonly string[] = [],
): Target | AppError {
  const tenantId = tenant.tenant.tenant_id;
  let workspaceId: string | null = null;
  let memoryId: string | null = null;
  if (facts.hostMemory) {
    if (facts.hostMemory.tenant_id !== tenantId) return AppError.notFound('memory');
    if (pins.memoryId && pins.memoryId !== facts.hostMemory.memory_id) return AppError.notFound('memory');
    memoryId = facts.hostMemory.memory_id;
    workspaceId = facts.hostMemory.workspace_id;
  } else if (pins.memoryId) {
    return AppError.forbidden('an mk_ key is accepted only on its own memory\'s hostname');
  }
  if (memParam !== undefined) {
    if (!memParam || (memoryId !== null && memParam.memory_id !== memoryId)) return AppError.notFound('memory');
    memoryId = memParam.memory_id;
    workspaceId = memParam.workspace_id;
  }
  const wsParam = facts.query.get('workspace_id');
  if (wsParam !== null) {
    if (!tenant.workspaces.has(wsParam) || (workspaceId !== null && workspaceId !== wsParam)) return AppError.notFound('workspace');
    workspaceId = wsParam;
  }
  if (pins.workspaceId && workspaceId !== null && workspaceId !== pins.workspaceId) return AppError.notFound('workspace');
  if (workspaceId === null && !pins.workspaceId && scopedMemories.length > 0) {
    const scoped = workspaceOfScope(tenant, scopedMemories);
    if (scoped !== 'active' && scoped !== 'none') workspaceId = scoped;
  }
  workspaceId ??= pins.workspaceId ?? tenant.tenant.active_workspace_id ?? tenant.tenant.default_workspace_id;
  if (!workspaceId) return AppError.notFound('workspace');
  memoryId ??= tenant.workspaces.get(workspaceId)?.primary_memory_id ?? '';
  return { workspaceId, memoryId };
}

/**
 * The workspace a memory-scoped key acts in when its request names none (see `resolveTarget`): `active` when the
 * active workspace's primary memory is in its scope, else the first workspace whose primary memory it names, else
 * `none` (it names no workspace's primary memory: `scopedMemoryLookup` decides).
 */
function workspaceOfScope(tenant: TenantContext, scopedMemories: readonly string[]): string {
  const active = tenant.workspaces.get(tenant.tenant.active_workspace_id ?? tenant.tenant.default_workspace_id ?? '');
  if (active?.primary_memory_id && scopedMemories.includes(active.primary_memory_id)) return 'active';
  for (const memoryId of scopedMemories) {
    for (const w of tenant.workspaces.values()) if (w.primary_memory_id === memoryId) return w.workspace_id;
  }
  return 'none';
}

/**
 * A key scoped only to memories that are no workspace's primary memory, whose request names no place: it acts in the
 * first of them that is a live memory of the tenant, as if it had named it (`?memory_id=`); undefined when a
 * primary memory decides (`workspaceOfScope`) or none of them is live. Before 2026-11-30 such a key was refused
 * (403) on every route, ping included, unless the request named its memory.
 */
function scopedMemoryLookup(
  ctx: GatewayContext,
  tenant: TenantContext,
  facts: RequestFacts,
  pins: { workspaceId: string | null; memoryId: string | null },
  scopedMemories: readonly string[],
): Promise<MemoryParam | undefined> | undefined {
  if (scopedMemories.length === 0 || facts.hostMemory || pins.workspaceId || pins.memoryId || facts.query.get('workspace_id') !== null) return undefined;
  if (workspaceOfScope(tenant, scopedMemories) !== 'none') return undefined;
  return (async () => {
    for (const memoryId of scopedMemories.slice(0, 16)) {
      const found = await tenantMemory(ctx, tenant.tenant.tenant_id, memoryId);
      if (found) return found;
    }
    return undefined;
  })();
}

/**
 * The whole credential pipeline for one request: find and verify the credential, resolve tenant, workspace
 * and memory, apply IP allowlist, scope, app permissions and credits locally, then one round trip to the
 * shared state for revocation, rate limit and monthly quota. Throws the AppError to answer with.
 */
export async function authenticate(ctx: GatewayContext, facts: RequestFacts, rule: RouteRule): Promise<AuthOutcome> {
  try {
    return await authenticateRequest(ctx, facts, rule);
  } catch (err) {
    if (err instanceof AppError && err.status === 401) (err.headers as Record<string, string>)['www-authenticate'] = challenge(rule, ctx.config.apiKeyCookie);
    throw err;
  }
}

/**
 * A 401's `WWW-Authenticate` (RFC 9110 requires one): the schemes this surface reads a credential from. `Bearer` for
 * the `Authorization` header; `ApiKey`, a scheme of Lore's naming (no registered scheme describes a key in a header
 * of its own), for `x-api-key`, the cookie or the socket's query parameter, each named.
 */
function challenge(rule: RouteRule, cookie: string): string {
  const challenges: string[] = [];
  if (rule.sources.includes('bearer')) challenges.push('Bearer realm="lore"');
  const places = [
    ...(rule.sources.includes('x-api-key') ? ['header="x-api-key"'] : []),
    ...(rule.sources.includes('cookie') ? [`cookie="${cookie}"`] : []),
    ...(rule.sources.includes('query') ? ['query="api-key"'] : []),
  ];
  if (places.length > 0) challenges.push(`ApiKey realm="lore", ${places.join(', ')}`);
  return challenges.join(', ');
}

async function authenticateRequest(ctx: GatewayContext, facts: RequestFacts, rule: RouteRule): Promise<AuthOutcome> {
  const presented = presentedCredential(ctx, facts, rule);
  if (presented.kind === 'session') return authenticateSession(ctx, facts, rule, presented.token);

  const now = Date.now();
  const parsed = presented.parsed;
  const hash = sha256Hex(parsed.secret);
  // A cached record is used without waiting for anything; only a miss (or a stale entry) goes to the loader.
  const cached = ctx.caches.credentials.get(credentialCacheKey(parsed.kind, hash));
  let cred = cached ? verifiedCredential(cached, hash) : await loadCredential(ctx, parsed, hash, true);
  if (!cred) throw refused(ctx, 'unknown_credential', 'the credential is not valid');
  const dead = deadReason(cred, now);
  // A revoked key (or OAuth client) is counted as `revoked`, as a revocation the shared state knows of; an expired
  // one as `dead_credential`.
  if (dead) throw refused(ctx, /revoked/.test(dead) ? 'revoked' : 'dead_credential', dead);
  const row = cred.row;
  const tenant = ctx.caches.tenants.get(row.tenant_id) ?? (await tenantContext(ctx, row.tenant_id));
  if (!tenant) throw unauthorized('the credential is not valid');

  let credential: CredentialKind;
  let subject: string;
  let role: string;
  let keyScope: KeyScope | null = null;
  let oauthScopes: string[] | null = null;
  let pins: { workspaceId: string | null; memoryId: string | null };
  let projectId: string | null;
  let rate = ctx.config.rateLimit;
  if (cred.kind === 'key') {
    credential = keyTypeOfPrefix(cred.row.type);
    subject = cred.row.key_id;
    role = cred.row.type === 'memory' ? 'memory' : 'tenant_admin';
    keyScope = cred.row.scopes;
    pins = { workspaceId: cred.row.workspace_id, memoryId: cred.row.type === 'memory' ? cred.row.memory_id : null };
    projectId = cred.row.project_id;
    if (cred.row.rate_limit) rate = { perSecond: cred.row.rate_limit.per_second, burst: cred.row.rate_limit.burst };
  } else {
    credential = 'oauth';
    subject = cred.row.client_id;
    role = 'integration';
    oauthScopes = cred.row.scopes;
    pins = { workspaceId: cred.row.workspace_id, memoryId: null };
    projectId = cred.row.project_id;
  }

  // Local decisions first; a refused request still asks the shared state whether the credential is revoked,
  // because "revoked" (401) must win over any other answer.
  let denial: AppError | null = null;
  const memLookup = memoryParamLookup(ctx, tenant.tenant.tenant_id, facts) ?? scopedMemoryLookup(ctx, tenant, facts, pins, keyScope?.memories ?? []);
  const target = resolveTarget(tenant, facts, pins, memLookup && (await memLookup), keyScope?.memories ?? []);
  if (target instanceof AppError) denial = target;
  const need: Need = { module: rule.module, access: rule.access, operation: rule.operation, memoryId: target instanceof AppError ? null : target.memoryId };
  if (!denial && cred.kind === 'key' && cred.row.type === 'memory' && rule.module !== 'memory') {
    denial = AppError.forbidden('an mk_ key reaches only its memory\'s /api/v1/memory routes');
  }
  if (!denial && cred.ipAllowlist.length > 0 && !addressAllowed(await allowlistAddress(ctx, facts, hash), cred.ipAllowlist)) {
    denial = AppError.forbidden('the credential is not allowed from this address');
  }
  if (!denial) {
    const reason =
      cred.kind === 'key'
        ? (scopeDenies(cred.row.scopes, need) ?? appPermissionDenies(cred.row.app_permissions, need))
        : oauthScopesDeny(cred.row.scopes, need);
    if (reason) denial = AppError.forbidden(reason);
  }
  const balance = tenant.tenant.credit_balance;
  if (!denial && rule.metered && balance !== null && balance <= 0) denial = creditError(balance);
  // Whether the credential could search or retrieve from a memory (which memories is for the identity's scope and
  // pin to say): chat, lists and graphs hand out documents' content only to such a credential.
  const granted = cred;
  const reads = (operation: string) => {
    const n: Need = { module: 'memory', access: 'read', operation, memoryId: null };
    return (granted.kind === 'key' ? (scopeDenies(granted.row.scopes, n) ?? appPermissionDenies(granted.row.app_permissions, n)) : oauthScopesDeny(granted.row.scopes, n)) === null;
  };
  const readsMemory = reads('search') || reads('retrieve');

  const plan = planOf(ctx, tenant.tenant);
  // A refused request spends rate like any other (so a flood of refusals is throttled too, and each answer carries
  // the RateLimit headers), never quota.
  const admitted = await ctx.state.admit({
    subject,
    consume: true,
    rate,
    quota: denial === null && plan.requests_per_month && rule.countsQuota !== false ? { tenantId: tenant.tenant.tenant_id, limit: plan.requests_per_month } : null,
  });
  if (observeSharedEpoch(ctx, admitted.epoch)) {
    // The shared state lost its records (or is new): nothing cached can be trusted; ask the database.
    cred = await loadCredential(ctx, parsed, hash, false);
    if (!cred || deadReason(cred, Date.now())) throw unauthorized('the credential is not valid');
  }
  if (admitted.revoked) {
    // The shared record says so at once on every replica; the database says why, so that every replica answers the
    // refusal the one that revoked it does (until 2026-11-30 the others said only "revoked" until their cache expired).
    const fresh = await loadCredential(ctx, parsed, hash, false);
    throw refused(ctx, 'revoked', (fresh && deadReason(fresh, Date.now())) ?? 'the credential has been revoked');
  }
  const headers = rateHeaders(admitted.rate, rate.perSecond);
  if (admitted.rate && !admitted.rate.allowed) {
    ctx.gatewayMetrics.rateLimitDecisions.inc({ decision: 'limited' });
    throw new AppError('RATE_LIMITED', 'the rate limit of this credential is exhausted; retry later', { headers });
  }
  if (denial) throw deniedWith(ctx, denial, headers);
  ctx.gatewayMetrics.rateAllowed.inc();
  if (admitted.quotaExceeded) throw quotaError(tenant, plan, headers);
  ctx.gatewayMetrics.authOk.inc();
  const t = target as Target;
  return {
    principal: {
      credential, tenantId: tenant.tenant.tenant_id, subject, owner: cred.kind === 'key' ? cred.row.lineage_id : subject, role, workspaceId: t.workspaceId, memoryId: t.memoryId, projectId,
      pinnedWorkspaceId: pins.workspaceId ?? (pins.memoryId || projectId ? t.workspaceId : null), keyScope, oauthScopes, groups: NO_GROUPS, email: null, readsMemory, tenant,
    },
    headers,
    expiresAtMs: cred.row.expires_at_ms,
  };
}

/**
 * The address a credential's IP allowlist is checked against: the client's own (`clientAddress`), or, on a call the
 * MCP tool server makes back for a client, the address that client's `/mcp` request came from, which the server
 * carries signed with the internal identity secret and bound to the key (`CLIENT_ADDRESS_HEADER`). Without it the
 * allowlist saw the tool server's address, and every tool call of an allowlisted key was refused. A header that does
 * not verify (a client's own, another key's, an expired one) is ignored: it cannot widen what the key reaches.
 */
async function allowlistAddress(ctx: GatewayContext, facts: RequestFacts, keyHash: string): Promise<string | null> {
  const carried = await ctx.signer.verifyClientAddress(header(facts.headers, CLIENT_ADDRESS_HEADER), keyHash);
  return carried ?? clientAddress(facts.remoteAddress, facts.headers['x-forwarded-for'], ctx.trustedProxies);
}

/** A refusal decided before the shared state was asked (scope, credits, place), counted, with the rate headers. */
function deniedWith(ctx: GatewayContext, denial: AppError, headers: Record<string, string>): AppError {
  ctx.gatewayMetrics.authDecisions.inc({ outcome: `denied_${denial.status}` });
  Object.assign(denial.headers, headers);
  return denial;
}

/** The 402 of a tenant whose monthly request quota is used up, with the request's rate headers. */
function quotaError(tenant: TenantContext, plan: ReturnType<typeof planOf>, headers: Record<string, string>): AppError {
  const err = planLimitError(`the ${tenant.tenant.plan} plan's monthly request quota is used up`, { limit: 'requests_per_month', value: plan.requests_per_month ?? 0 });
  Object.assign(err.headers, headers);
  return err;
}

/** Bearer session JWTs on the surfaces that accept signed-in users (core, agents). */
async function authenticateSession(ctx: GatewayContext, facts: RequestFacts, rule: RouteRule, token: string): Promise<AuthOutcome> {
  const user = await resolveSession(ctx, token);
  if (!user) throw refused(ctx, 'invalid_session', await sessionRefusal(ctx, token));
  const tenant = await tenantContext(ctx, user.tenant_id);
  if (!tenant) throw refused(ctx, 'invalid_session', 'the session is not valid');
  const memLookup = memoryParamLookup(ctx, tenant.tenant.tenant_id, facts);
  const target = resolveTarget(tenant, facts, { workspaceId: null, memoryId: null }, memLookup && (await memLookup));
  let denial: AppError | null = target instanceof AppError ? target : null;
  const balance = tenant.tenant.credit_balance;
  if (!denial && rule.metered && balance !== null && balance <= 0) denial = creditError(balance);
  // A signed-in user's requests count against the tenant's monthly quota as a key's do (before 2026-11-30 they were
  // neither counted nor refused once it was used up).
  const plan = planOf(ctx, tenant.tenant);
  const quota = plan.requests_per_month && rule.countsQuota !== false ? { tenantId: tenant.tenant.tenant_id, limit: plan.requests_per_month } : null;
  const admitted = await ctx.state.admit({ subject: user.user_id, consume: true, rate: ctx.config.rateLimit, quota: denial === null ? quota : null });
  if (admitted.revoked) throw refused(ctx, 'invalid_session', 'the session is not valid');
  const headers = rateHeaders(admitted.rate, ctx.config.rateLimit.perSecond);
  if (admitted.rate && !admitted.rate.allowed) {
    ctx.gatewayMetrics.rateLimitDecisions.inc({ decision: 'limited' });
    throw new AppError('RATE_LIMITED', 'the rate limit is exhausted; retry later', { headers });
  }
  if (denial) throw deniedWith(ctx, denial, headers);
  ctx.gatewayMetrics.rateAllowed.inc();
  if (admitted.quotaExceeded) throw quotaError(tenant, plan, headers);
  ctx.gatewayMetrics.authOk.inc();
  const t = target as Target;
  return {
    principal: {
      credential: 'session', tenantId: user.tenant_id, subject: user.user_id, owner: user.user_id, role: user.role, workspaceId: t.workspaceId,
      memoryId: t.memoryId, projectId: null, pinnedWorkspaceId: null, keyScope: null, oauthScopes: null, groups: user.groups, email: user.email, readsMemory: true, tenant,
    },
    headers,
    expiresAtMs: null,
  };
}

/**
 * The identity internal services receive (signed by the caller with IdentitySigner). A session's identity carries
 * the user's groups (possibly none); a key's or an OAuth token's carries no `groups` field.
 */
export function identityOf(principal: Principal, requestId: string): Identity {
  const identity: Identity = {
    tenant_id: principal.tenantId,
    workspace_id: principal.workspaceId,
    memory_id: principal.memoryId,
    credential: principal.credential,
    subject: principal.owner,
    role: principal.role,
    project_id: principal.projectId,
    request_id: requestId,
  };
  if (principal.keyScope && Object.keys(principal.keyScope).length > 0) identity.scopes = principal.keyScope;
  if (principal.credential === 'session') identity.groups = [...principal.groups];
  if (principal.email) identity.email = principal.email;
  // Only what narrows the credential is written (tokens stay small; absent claims mean the whole tenant).
  if (principal.pinnedWorkspaceId !== null) identity.workspace_pinned = true;
  if (!principal.readsMemory) identity.memory_read = false;
  return identity;
}

/** Where a route's rule reads a credential, in words: what a 401 without one tells the caller to send. */
function credentialPlaces(sources: readonly string[], cookie: string): string {
  const words: Record<string, string> = {
    'x-api-key': 'the x-api-key header',
    bearer: 'Authorization: Bearer <credential>',
    cookie: `the ${cookie} cookie`,
    query: 'the api-key query parameter',
  };
  const places = sources.map((source) => words[source] ?? source);
  return places.length <= 1 ? (places[0] ?? 'none is accepted here') : `${places.slice(0, -1).join(', ')} or ${places[places.length - 1]}`;
}
