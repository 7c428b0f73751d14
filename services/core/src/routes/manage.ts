import { z } from 'zod';
import { coreError } from '../application/errors';
import { SOURCES, type SourceIssue } from '../domain/sources';
import { CORE_PREFIX, detail, type CoreGuard, type Guard } from './route';

/** Connector administration (spec 2's enterprise connector routes and ours), forwarded by the gateway as module `connectors`. */
export const MANAGE_PREFIX = `${CORE_PREFIX}/manage`;

/** Behind the identity guard: the principal must be an administrator (a tenant key or a user with role admin). */
const administratorsOnly: Guard = async (ctx, next) => {
  if (!ctx.state.principal.admin) throw coreError('FORBIDDEN', 'administrators only');
  await next();
};

/**
 * Administrators only, for every route. Reads also admit an administrator's read-only key (it may look, never
 * change); changes use `guard('admin')`, which refuses read-only keys.
 */
export const adminReads = (guard: CoreGuard): Guard[] => [guard('read'), administratorsOnly];
export const adminWrites = (guard: CoreGuard): Guard[] => [guard('admin')];

export const ADMIN_READ = { 403: detail('administrators only (a tenant key or an admin user)') };
export const ADMIN_WRITE = { 403: detail('administrators only (a tenant key or an admin user), or a read-only key') };

export const source = z.enum(SOURCES, `must be one of: ${SOURCES.join(', ')}`);

/** Group ids (the gateway's user groups): non-negative integers, each once. */
export const groupIds = z.array(z.number().int('must be an integer').min(0).max(2_147_483_647)).max(100);

/** Reports a domain rule's issues under `at` in the body. */
export function addIssues(ctx: z.RefinementCtx, at: Array<string | number>, issues: SourceIssue[]): void {
  for (const i of issues) ctx.addIssue({ code: 'custom', path: [...at, ...i.path], message: i.message });
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
