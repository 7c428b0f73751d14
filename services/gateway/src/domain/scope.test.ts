import { appPermissionDenies, invalidOauthScopes, oauthScopesDeny, scopeDenies, scopesCovered, validateAppPermissions, type Need } from './scope';

const need = (over: Partial<Need> = {}): Need => ({ module: 'memory', access: 'read', operation: 'search', memoryId: 'mem_1', ...over });

describe('key scope', () => {
  it('treats an empty scope as unrestricted', () => {
    expect(scopeDenies({}, need({ access: 'write' }))).toBeNull();
    expect(scopeDenies(null, need())).toBeNull();
  });

  it('narrows by module, access and memory', () => {
    expect(scopeDenies({ modules: ['projects'] }, need())).toMatch(/memory module/);
    expect(scopeDenies({ modules: ['memory'] }, need())).toBeNull();
    expect(scopeDenies({ access: 'read' }, need({ access: 'write' }))).toMatch(/read-only/);
    expect(scopeDenies({ access: 'write' }, need())).toMatch(/write-only/);
    expect(scopeDenies({ access: 'read_write' }, need({ access: 'write' }))).toBeNull();
    expect(scopeDenies({ memories: ['mem_2'] }, need())).toMatch(/memory/);
    expect(scopeDenies({ memories: ['mem_1'] }, need())).toBeNull();
  });

  it('refuses a route open to any access level to no access level, but still by module and memory', () => {
    for (const access of ['read', 'write', 'read_write'] as const) expect(scopeDenies({ access }, need({ access: 'any' }))).toBeNull();
    expect(scopeDenies({ access: 'read', modules: ['projects'] }, need({ access: 'any' }))).toMatch(/memory module/);
    expect(scopeDenies({ access: 'write', memories: ['mem_2'] }, need({ access: 'any' }))).toMatch(/memory/);
  });
});

describe('app_permissions', () => {
  it('is unrestricted when empty and an allow-list otherwise', () => {
    expect(appPermissionDenies({}, need())).toBeNull();
    expect(appPermissionDenies({ projects: true }, need())).toMatch(/memory app/);
    expect(appPermissionDenies({ memory: true }, need())).toBeNull();
    expect(appPermissionDenies({ memory: ['ingest'] }, need())).toMatch(/memory\/search/);
    expect(appPermissionDenies({ memory: ['search'] }, need())).toBeNull();
    expect(appPermissionDenies({ memory: false }, need())).toMatch(/memory app/);
  });

  it('validates shape and app names', () => {
    expect(validateAppPermissions({ memory: ['search'], pages: true })).toEqual([]);
    expect(validateAppPermissions({ billing: true })).toEqual(['app_permissions: unknown app "billing"']);
    expect(validateAppPermissions([])).toEqual(['app_permissions must be an object']);
  });
});

describe('OAuth scopes', () => {
  it('lets write imply read and * stand for every module', () => {
    expect(oauthScopesDeny(['memory:read'], need())).toBeNull();
    expect(oauthScopesDeny(['memory:read'], need({ access: 'write' }))).toMatch(/memory:write/);
    expect(oauthScopesDeny(['memory:write'], need())).toBeNull();
    expect(oauthScopesDeny(['*:read'], need())).toBeNull();
    expect(oauthScopesDeny(['projects:write'], need())).not.toBeNull();
    // Any access level: the module's read or write scope will do.
    expect(oauthScopesDeny(['memory:read'], need({ access: 'any' }))).toBeNull();
    expect(oauthScopesDeny(['*:write'], need({ access: 'any' }))).toBeNull();
    expect(oauthScopesDeny(['projects:read'], need({ access: 'any' }))).toBe("the token's scopes do not allow memory:read");
  });

  it('rejects unknown scopes and requests beyond the grant', () => {
    expect(invalidOauthScopes(['memory:read', 'memory:admin', 'nope:read', '*:write'])).toEqual(['memory:admin', 'nope:read']);
    expect(scopesCovered(['memory:read'], ['memory:write'])).toBe(true);
    expect(scopesCovered(['memory:write'], ['memory:read'])).toBe(false);
    expect(scopesCovered(['projects:read'], ['*:read'])).toBe(true);
  });
});
