import { MODULES, type Module, type KeyScopes as KeyScope } from '@lore/contracts';

/** Read routes never change state; everything else is a write. Search is a POST but reads. */
export type Access = 'read' | 'write';
/**
 * What a route asks of a credential's access level: `read`, `write`, or `any` for a surface every access level may
 * use because it changes nothing by itself and each thing it does is authorised again where it happens (the MCP
 * surface: docs/gateway.md, "Forwarding"). The module, memory and app checks still apply to `any`.
 */
export type RouteAccess = Access | 'any';
export type KeyAccess = 'read' | 'write' | 'read_write';

// The modules a key scope or an OAuth scope can name, and the scope's shape, are shared with the admin API and the
// internal identity: @lore/contracts declares them.
export { MODULES, type Module, type KeyScope };

/** What one request needs from the credential. */
export interface Need {
  module: Module;
  access: RouteAccess;
  /** The memory the request acts on, when it acts on one. */
  memoryId?: string | null;
  /** Operation inside the app (first path segment after the surface), for `app_permissions`. */
  operation: string;
}

/** A reason for a 403, or null when the scope allows the request. An empty scope allows everything. */
export function scopeDenies(scope: KeyScope | null | undefined, need: Need): string | null {
  if (!scope) return null;
  if (scope.modules && scope.modules.length > 0 && !scope.modules.includes(need.module)) {
    return `the key's scope does not include the ${need.module} module`;
  }
  // A route open to `any` access level is refused neither to read-only nor to write-only keys.
  if (scope.access === 'read' && need.access === 'write') return 'the key is read-only';
  if (scope.access === 'write' && need.access === 'read') return 'the key is write-only';
  if (need.memoryId && scope.memories && scope.memories.length > 0 && !scope.memories.includes(need.memoryId)) {
    return 'the key\'s scope does not include this memory';
  }
  return null;
}

/**
 * `app_permissions`: `{ "<app>": true | ["<operation>", ...] }`. Empty (or absent) means unrestricted, the legacy
 * default. When present, an app missing from it is denied, and a list narrows the app to those operations.
 */
export type AppPermissions = Record<string, boolean | string[]>;

export function appPermissionDenies(perms: AppPermissions | null | undefined, need: Need): string | null {
  if (!perms || Object.keys(perms).length === 0) return null;
  const entry = perms[need.module];
  if (entry === undefined || entry === false) return `the key has no permission for the ${need.module} app`;
  if (entry === true) return null;
  if (!entry.includes(need.operation) && !entry.includes('*')) return `the key has no permission for ${need.module}/${need.operation}`;
  return null;
}

export function validateAppPermissions(value: unknown): string[] {
  const problems: string[] = [];
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return ['app_permissions must be an object'];
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 64) problems.push('app_permissions has more than 64 apps');
  for (const [app, v] of entries) {
    if (!(MODULES as readonly string[]).includes(app)) problems.push(`app_permissions: unknown app "${app}"`);
    if (typeof v === 'boolean') continue;
    if (!Array.isArray(v) || v.length > 64 || v.some((op) => typeof op !== 'string' || !/^[\w*.-]{1,64}$/.test(op))) {
      problems.push(`app_permissions.${app} must be true, false or a list of up to 64 operation names`);
    }
  }
  return problems;
}

/**
 * OAuth scopes are `<module>:read` or `<module>:write` (`*` stands for every module). Write implies read:
 * an integration allowed to change something may also look at it.
 */
export const OAUTH_SCOPE_RE = /^(\*|[a-z-]+):(read|write)$/;

export function invalidOauthScopes(scopes: readonly string[]): string[] {
  return scopes.filter((s) => {
    const m = OAUTH_SCOPE_RE.exec(s);
    return !m || (m[1] !== '*' && !(MODULES as readonly string[]).includes(m[1]!));
  });
}

export function oauthScopesDeny(scopes: readonly string[], need: Need): string | null {
  const has = (s: string) => scopes.includes(s);
  if (has(`${need.module}:write`) || has('*:write')) return null;
  // A surface open to any access level needs the module, read or write: read is the least that names it.
  const access: Access = need.access === 'write' ? 'write' : 'read';
  if (access === 'read' && (has(`${need.module}:read`) || has('*:read'))) return null;
  return `the token's scopes do not allow ${need.module}:${access}`;
}

/** A requested scope set must be a subset of what the client was granted (write grants cover read). */
export function scopesCovered(requested: readonly string[], granted: readonly string[]): boolean {
  return requested.every((s) => {
    const [mod, acc] = s.split(':') as [string, string];
    if (granted.includes(s) || granted.includes(`*:${acc}`)) return true;
    if (acc === 'read') return granted.includes(`${mod}:write`) || granted.includes('*:write');
    return false;
  });
}
