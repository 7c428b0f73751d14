import { isAdminRole } from '@lore/contracts';
import { AppError, IDENTITY_HEADER, routeFor, type Identity, type IdentitySigner, type LoreState, type ResponseSpec } from '@lore/runtime';
import type Koa from 'koa';
import { z } from 'zod';
import type { MemoryScope } from '../application/context';

/** Every memory route lives under this prefix, exactly as the gateway forwards it. */
export const MEMORY_PREFIX = '/api/v1/memory';

/**
 * The graph-internal routes (core's connectors push documents here). The gateway forwards to the graph only
 * `/api/v1/memory`, spec 2's `/memory` paths and `/openapi.json`, never this prefix: nothing under it is reachable
 * from outside the cluster's services.
 */
export const INTERNAL_PREFIX = '/internal/v1';

export interface GraphState extends LoreState {
  identity: Identity;
  scope: MemoryScope;
}

/** Typed route definitions of the graph's listener (services/runtime/src/http/routes.ts). */
export const route = routeFor<GraphState>();

export type Guard = Koa.Middleware<GraphState>;

/**
 * The guard of every memory route: the caller's identity and memory, and whether it may change memory content
 * (`write`) or only search and look (`read`).
 */
/**
 * `search`: a read that hands out the memory's content by query (search, retrieve, the streamed search), refused to
 * an identity denied memory reads (`memory_read: false`): the gateway refuses such a credential these routes, and
 * core or agents calling them with its identity must be refused too.
 */
export type MemoryGuard = (access: 'read' | 'write' | 'search') => Guard;

/** OpenAPI security of the memory routes (an x-api-key credential at the gateway) and of the open document. */
export const KEY: Array<Record<string, string[]>> = [{ apiKey: [] }];
/** OpenAPI security of the graph-internal routes: a signed identity in `x-lore-identity`, no API key. */
export const IDENTITY: Array<Record<string, string[]>> = [{ loreIdentity: [] }];
export const NONE: Array<Record<string, string[]>> = [];
/** OpenAPI security of spec 2's knowledge-graph routes (`/memory/*`): a bearer token or an x-api-key at the gateway. */
export const BEARER_OR_KEY: Array<Record<string, string[]>> = [{ bearer: [] }, { apiKey: [] }];

/** The platform's error envelope; validation errors list every issue in `details`. */
export const errorView = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    request_id: z.string(),
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});

export const err = (description: string): ResponseSpec => ({ description, schema: errorView });

/** What a write route answers to a read-only key. */
export const READ_ONLY = { 403: err('the key is read-only (scope access `read`)') };

/**
 * Verifies the gateway's signed identity and derives the memory scope from it, and from nothing else: no header,
 * query parameter or body field can name a tenant or a memory. A credential without a memory (its workspace has
 * none) cannot reach memory data; a read-only key may search and look, never change memory content.
 */
export function memoryGuard(signer: IdentitySigner): MemoryGuard {
  return (access) => async (ctx, next) => {
    const identity = await signer.verify(ctx.get(IDENTITY_HEADER) || undefined);
    if (!identity.memory_id) throw new AppError('NOT_FOUND', 'no memory is selected for this credential');
    ctx.state.identity = identity;
    // An administrator sees every document; anyone else one a connector pushed as not public only through a group.
    ctx.state.scope = {
      tenantId: identity.tenant_id, workspaceId: identity.workspace_id || 'default', memoryId: identity.memory_id, admin: isAdminRole(identity.role),
      groups: identity.groups ?? [],
    };
    ctx.state.log = ctx.state.log.child({ tenant_id: identity.tenant_id, memory_id: identity.memory_id });
    if (access === 'write' && identity.scopes?.access === 'read') throw AppError.forbidden('this key is read-only');
    if (access === 'search' && identity.memory_read === false) throw AppError.forbidden('this credential may not read the memory');
    await next();
  };
}

/**
 * The guard of the graph-internal connector routes: the same signed identity and memory scope as `memoryGuard`
 * (401 without a valid one, 404 without a memory), and only an administrator role (`isAdminRole`) may write a
 * connector's documents into the memory (403 otherwise, and for a read-only key).
 */
export function connectorGuard(signer: IdentitySigner): Guard {
  const memory = memoryGuard(signer)('write');
  return (ctx, next) =>
    memory(ctx, async () => {
      if (!ctx.state.scope.admin) throw AppError.forbidden('only an administrator may push connector documents');
      await next();
    });
}

/**
 * The guard of spec 2's knowledge-graph routes (`/memory/*`): the gateway's signed identity, from which alone the
 * tenant comes. A graph belongs to the tenant, so no memory needs to be selected (a bearer session has none); a
 * read-only key may look and ask, never create or fill a graph (403).
 */
export function tenantGuard(signer: IdentitySigner): MemoryGuard {
  return (access) => async (ctx, next) => {
    const identity = await signer.verify(ctx.get(IDENTITY_HEADER) || undefined);
    ctx.state.identity = identity;
    ctx.state.log = ctx.state.log.child({ tenant_id: identity.tenant_id });
    if (access === 'write' && identity.scopes?.access === 'read') throw AppError.forbidden('this key is read-only');
    await next();
  };
}
