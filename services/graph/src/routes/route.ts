import { AppError, IDENTITY_HEADER, type Identity, type IdentitySigner, type LoreContext, type LoreState } from '@lore/runtime';
import type Koa from 'koa';
import type { MemoryDeps, MemoryScope } from '../application/context';

export interface GraphState extends LoreState {
  identity: Identity;
  scope: MemoryScope;
}

export type GraphContext = Koa.ParameterizedContext<GraphState> & LoreContext;

export interface RouteDeps {
  memory: MemoryDeps;
}

/**
 * Verifies the gateway's signed identity and derives the memory scope from it, and from nothing else: no
 * header, query parameter or body field can name a tenant or a memory. Requests without a memory (a
 * credential whose workspace has none) cannot reach memory data.
 */
export function identityMiddleware(signer: IdentitySigner) {
  return async (ctx: GraphContext, next: Koa.Next) => {
    const identity = await signer.verify(ctx.get(IDENTITY_HEADER) || undefined);
    if (!identity.memory_id) throw new AppError('NOT_FOUND', 'no memory is selected for this credential');
    ctx.state.identity = identity;
    ctx.state.scope = { tenantId: identity.tenant_id, workspaceId: identity.workspace_id || 'default', memoryId: identity.memory_id };
    ctx.state.log = ctx.state.log.child({ tenant_id: identity.tenant_id, memory_id: identity.memory_id });
    await next();
  };
}

/** The parsed JSON body (the app's body parser put it there; absent for other content types). */
export function bodyOf(ctx: { request: unknown }): unknown {
  return (ctx.request as { body?: unknown }).body;
}

/** Read-only keys (scope access `read`) may search and look, never change memory content. */
export function requireWrite() {
  return async (ctx: GraphContext, next: Koa.Next) => {
    if (ctx.state.identity.scopes?.access === 'read') throw AppError.forbidden('this key is read-only');
    await next();
  };
}
