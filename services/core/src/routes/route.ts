import { AppError, IDENTITY_HEADER, detailError, errorEnvelopeView, detailValidationError, routeFor, type Identity, type IdentitySigner, type LoreState, type ResponseSpec, detailValidationView } from '@lore/runtime';
import { callerOf } from '@lore/contracts';
import type Koa from 'koa';
import { z } from 'zod';
import { coreError } from '../application/errors';
import type { Principal } from '../application/principal';

/** Every core route lives under spec 2's API base path, exactly as the gateway forwards it. */
export const CORE_PREFIX = '/api';

export interface CoreState extends LoreState {
  identity: Identity;
  /** The gateway's signed identity as it came: passed on to the memory API so retrieval sees what the caller may. */
  identityToken: string;
  principal: Principal;
}

/** Typed route definitions of the core listener (services/runtime/src/http/routes.ts). */
export const route = routeFor<CoreState>();

export type Guard = Koa.Middleware<CoreState>;

/**
 * `read`: look; `write`: change one's own chats; `admin`: manage connectors (within the credential's reach);
 * `tenant-admin`: manage what every workspace of the tenant shares (personas), so only an administrator whose
 * credential is not bound to a workspace, a project or some memories.
 */
export type CoreAccess = 'read' | 'write' | 'admin' | 'tenant-admin';
export type CoreGuard = (access: CoreAccess) => Guard;

/**
 * OpenAPI security of the core routes: spec 2's bearer token (a session JWT or an API key) or the API-key cookie,
 * all verified by the gateway, which hands core a signed identity.
 */
export const CORE_SECURITY: Array<Record<string, string[]>> = [{ bearer: [] }, { apiKeyCookie: [] }, { apiKey: [] }];
export const NONE: Array<Record<string, string[]>> = [];

/** Spec 2's error body: `{ detail: string }`. */
export const detailView = z.object({ detail: z.string() });
/** Spec 2's validation failure: 422 `{ detail: [{ loc, msg, type }] }`. */
export const validationErrorView = detailValidationView;

export const detail = (description: string): ResponseSpec => ({ description, schema: detailView });
/**
 * The gateway's error envelope: what a client gets when the gateway refuses the request before it reaches core (a
 * missing, mistyped or revoked credential is 401 there, in this shape).
 */
export const gatewayErrorView = errorEnvelopeView;

/** Every core route answers bad input as spec 2 says: 422 with every issue, and the reader's refusals as `detail`. */
export const SPEC_INPUT = { invalid: detailValidationError, unreadable: (e: AppError) => detailError(e) };


/**
 * Verifies the gateway's signed identity and derives the principal from it, and from nothing else: no header,
 * query parameter (`tenant_id` is accepted and ignored) or body field names a tenant or an owner. A read-only key
 * may look, never change; personas and connectors are managed by administrators (a tenant key or an admin user).
 */
export function coreGuard(signer: IdentitySigner): CoreGuard {
  return (access) => async (ctx, next) => {
    let identity: Identity;
    const token = ctx.get(IDENTITY_HEADER);
    try {
      identity = await signer.verify(token || undefined);
    } catch (err) {
      if (err instanceof AppError) throw detailError(err);
      throw err;
    }
    ctx.state.identity = identity;
    ctx.state.identityToken = token;
    ctx.state.principal = { ...callerOf(identity), email: identity.email ?? '' };
    ctx.state.log = ctx.state.log.child({ tenant_id: identity.tenant_id });
    if (access !== 'read' && identity.scopes?.access === 'read') throw coreError('FORBIDDEN', 'this key is read-only');
    if ((access === 'admin' || access === 'tenant-admin') && !ctx.state.principal.admin) throw coreError('FORBIDDEN', 'administrators only');
    const { reach } = ctx.state.principal;
    if (access === 'tenant-admin' && (reach.workspaceId !== null || reach.memoryIds !== null)) {
      throw coreError('FORBIDDEN', 'tenant-wide administrators only: this credential is bound to a workspace, a project or some memories, and personas serve every workspace');
    }
    await next();
  };
}
