import { callerOf, IdentityClaimsSchema, MAX_GROUPS_PER_USER, memoryReach, readsOwnMemory, withinReach } from './identity';

const claims = { tenant_id: 't_1', workspace_id: 'ws_1', memory_id: 'm_1', credential: 'session', subject: 'usr_1', role: 'member' };

describe('the identity claims\' user groups', () => {
  it('are optional, so identities signed before groups existed (and keys\', which have none) still parse', () => {
    const parsed = IdentityClaimsSchema.parse(claims);
    expect(parsed.groups).toBeUndefined();
    expect(IdentityClaimsSchema.parse({ ...claims, groups: [] }).groups).toEqual([]);
    expect(IdentityClaimsSchema.parse({ ...claims, groups: [1, 7, 2_147_483_647] }).groups).toEqual([1, 7, 2_147_483_647]);
  });

  it('are integer ids, at most as many as a user may belong to', () => {
    for (const groups of [[1.5], [-1], ['7'], [2_147_483_648], Array.from({ length: MAX_GROUPS_PER_USER + 1 }, (_, i) => i)]) {
      expect({ groups, ok: IdentityClaimsSchema.safeParse({ ...claims, groups }).success }).toEqual({ groups, ok: false });
    }
    expect(IdentityClaimsSchema.safeParse({ ...claims, groups: Array.from({ length: MAX_GROUPS_PER_USER }, (_, i) => i) }).success).toBe(true);
  });
});

describe('callerOf', () => {
  it('owns by credential kind and subject, and makes administrators of the administering roles only', () => {
    const member = IdentityClaimsSchema.parse(claims);
    expect(callerOf(member)).toEqual({ tenantId: 't_1', owner: 'session:usr_1', admin: false, workspaceId: 'ws_1', memoryId: 'm_1', reach: { workspaceId: null, memoryIds: null, readsDocuments: true } });
    expect(callerOf({ ...member, credential: 'ck_live', subject: 'key_9', role: 'tenant_admin' })).toMatchObject({ owner: 'ck_live:key_9', admin: true });
    expect(callerOf({ ...member, role: 'admin' }).admin).toBe(true);
    // The same subject under another credential kind is another owner.
    expect(callerOf({ ...member, credential: 'oauth' }).owner).not.toBe(callerOf(member).owner);
  });
});

describe('memoryReach', () => {
  const key = IdentityClaimsSchema.parse({ ...claims, credential: 'ck_live', subject: 'key_1', role: 'tenant_admin' });
  const here = { workspace_id: 'ws_1', memory_id: 'm_1' };
  const elsewhere = { workspace_id: 'ws_2', memory_id: 'm_2' };

  it('is the whole tenant for a credential nothing narrows', () => {
    expect(memoryReach(key)).toEqual({ workspaceId: null, memoryIds: null, readsDocuments: true });
    expect(withinReach(memoryReach(key), elsewhere)).toBe(true);
  });

  it('is the bound workspace for a pinned credential and an mk_ key, and the scoped memories for a scoped key', () => {
    const pinned = memoryReach({ ...key, workspace_pinned: true });
    expect([withinReach(pinned, here), withinReach(pinned, elsewhere), withinReach(pinned, { workspace_id: 'ws_1', memory_id: 'm_9' })]).toEqual([true, false, true]);
    const mk = memoryReach({ ...key, credential: 'mk', role: 'memory' });
    expect([withinReach(mk, here), withinReach(mk, { workspace_id: 'ws_1', memory_id: 'm_9' })]).toEqual([true, false]);
    const scoped = memoryReach({ ...key, scopes: { memories: ['m_2'] } });
    expect([withinReach(scoped, here), withinReach(scoped, elsewhere)]).toEqual([false, true]);
    // Its own memory out of its scope: it reads none of its documents.
    expect(readsOwnMemory(callerOf({ ...key, scopes: { memories: ['m_2'] } }))).toBe(false);
  });

  it('reads no documents when the gateway says so or the key\'s modules leave the memory out', () => {
    expect(memoryReach({ ...key, memory_read: false }).readsDocuments).toBe(false);
    expect(memoryReach({ ...key, scopes: { modules: ['chat'] } }).readsDocuments).toBe(false);
    expect(memoryReach({ ...key, scopes: { modules: ['chat', 'memory'] } }).readsDocuments).toBe(true);
    expect(readsOwnMemory(callerOf({ ...key, memory_read: false }))).toBe(false);
    expect(readsOwnMemory(callerOf(key))).toBe(true);
  });
});
