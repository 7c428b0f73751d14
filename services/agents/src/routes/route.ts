import { AppError, envelopeError, errorEnvelopeView, IDENTITY_HEADER, issueLoc, routeFor, type Identity, type IdentitySigner, type LoreState, type ResponseSpec, type ValidationIssue, detailValidationView } from '@lore/runtime';
import { callerOf } from '@lore/contracts';
import type Koa from 'koa';
import { z } from 'zod';
import type { Principal } from '../application/principal';

export interface AgentsState extends LoreState {
  identity: Identity;
  principal: Principal;
}

/** Typed route definitions of the agents listener (services/runtime/src/http/routes.ts). */
export const route = routeFor<AgentsState>();

export type Guard = Koa.Middleware<AgentsState>;
/** `read`: look; `write`: start, change and stop one's own workflows, lists and imports. */
export type AgentsAccess = 'read' | 'write';

/**
 * Spec 3 has three 422 bodies and no fixed shape for other errors; which route answers which is Lore's decision
 * (docs/agents.md, "Errors"):
 * - `envelope` — the search routes (`/company-search`, `/people-search`, and later deep search, web research,
 *   crawler, research): a schema failure is body (a) `{status_code: 422, message, errors: [{field, message, type}],
 *   data: null}`; a request refused as a whole is body (b), the same with `errors: []`; any other error is the same
 *   envelope with its own status.
 * - `detail` — the `/api/...` routes (generic workflow, CSV import, utility, seed): a schema failure is body (c)
 *   `{detail: [{loc, msg, type}]}`; any other error `{detail: "<message>"}`.
 */
export type ErrorFamily = 'envelope' | 'detail';

/** The family of a route path: `/api/...` (and `/`) are `detail`, the search routes `envelope`. */
export const familyOf = (path: string): ErrorFamily => (path.startsWith('/api/') || path === '/' ? 'detail' : 'envelope');

/** OpenAPI security of the agents routes: a bearer key or session JWT, the key cookie, or x-api-key (all checked by the gateway). */
export const AGENTS_SECURITY: Array<Record<string, string[]>> = [{ bearer: [] }, { apiKeyCookie: [] }, { apiKey: [] }];
export const NONE: Array<Record<string, string[]>> = [];

export const envelopeIssue = z.object({ field: z.string(), message: z.string(), type: z.string() });
/** Bodies (a) and (b) of spec 3, and every other error of the envelope family. */
export const envelopeView = z.object({ status_code: z.number().int(), message: z.string(), errors: z.array(envelopeIssue), data: z.null() });
/** Body (c) of spec 3. */
export const validationDetailView = detailValidationView;
/** Any other error of the detail family. */
export const detailView = z.object({ detail: z.string() });
/**
 * The gateway's error envelope: what a client gets when the gateway refuses the request before it reaches agents
 * (a missing, mistyped or revoked credential is 401 there, in this shape, whatever the route's family).
 */
export const gatewayErrorView = errorEnvelopeView;

const issueType = (message: string): string => (/required|received undefined/i.test(message) ? 'missing' : 'value_error');

/** Body (a): every issue as `{field: "body.prompt", message, type}`. */
export function envelopeValidationError(issues: ValidationIssue[], where: 'body' | 'query' | 'path'): AppError {
  const errors = issues.map((i) => ({ field: i.path === '' ? where : `${where}.${i.path}`, message: i.message, type: issueType(i.message) }));
  return new AppError('UNPROCESSABLE', 'validation failed', { body: { status_code: 422, message: 'validation failed', errors, data: null } });
}

/** Body (c): every issue as `{loc: ["body", "prompt"], msg, type}`. */
export function detailValidationError(issues: ValidationIssue[], where: 'body' | 'query' | 'path'): AppError {
  const detail = issues.map((i) => ({ loc: issueLoc(where, i), msg: i.message, type: issueType(i.message) }));
  return new AppError('UNPROCESSABLE', `${where} is invalid`, { body: { detail } });
}

/** An application error worded in the family's shape (an error that already has a body keeps it). */
export function shapeError(family: ErrorFamily, err: AppError): AppError {
  if (err.body !== undefined) return err;
  if (family === 'envelope') return envelopeError(err);
  // The same error worded again: its stack and its cause, not itself as the cause (a logged cause repeats the message: "x: x").
  const shaped = new AppError(err.code, err.message, { headers: err.headers, body: { detail: err.message }, ...(err.cause !== undefined ? { cause: err.cause } : {}) });
  shaped.stack = err.stack;
  return shaped;
}

/** What each family declares for its routes' invalid input and their other errors. */
export const FAMILY = {
  envelope: {
    invalid: envelopeValidationError,
    unreadable: (e: AppError) => shapeError('envelope', new AppError(e.code, e.message, { headers: e.headers })),
    error: (description: string): ResponseSpec => ({ description, schema: envelopeView }),
    invalidView: envelopeView,
  },
  detail: {
    invalid: detailValidationError,
    unreadable: (e: AppError) => shapeError('detail', new AppError(e.code, e.message, { headers: e.headers })),
    error: (description: string): ResponseSpec => ({ description, schema: detailView }),
    invalidView: validationDetailView,
  },
} as const;

/** Words every error a later middleware or the handler throws in the family's shape. */
export function errorShape(family: ErrorFamily): Guard {
  return async (_ctx, next) => {
    try {
      await next();
    } catch (err) {
      throw err instanceof AppError ? shapeError(family, err) : err;
    }
  };
}

export type AgentsGuard = (access: AgentsAccess, family: ErrorFamily) => Guard[];

/** The principal of a verified identity (the HTTP routes' guard and the session sockets). */
export function principalOf(identity: Identity): Principal {
  return {
    ...callerOf(identity),
    role: identity.role,
    ...(identity.groups ? { groups: identity.groups } : {}),
  };
}

/**
 * Verifies the gateway's signed identity and derives the principal from it, and from nothing else (a `tenant_id`
 * in a body is ignored). A read-only key may look, never start or change anything.
 */
export function agentsGuard(signer: IdentitySigner): AgentsGuard {
  return (access, family) => [
    errorShape(family),
    async (ctx, next) => {
      const identity = await signer.verify(ctx.get(IDENTITY_HEADER) || undefined);
      ctx.state.identity = identity;
      ctx.state.principal = principalOf(identity);
      ctx.state.log = ctx.state.log.child({ tenant_id: identity.tenant_id });
      if (access === 'write' && identity.scopes?.access === 'read') throw new AppError('FORBIDDEN', 'this key is read-only');
      await next();
    },
  ];
}
