import { callerOf, IdentityClaimsSchema, MAX_GROUPS_PER_USER } from './identity';

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
    expect(callerOf(member)).toEqual({ tenantId: 't_1', owner: 'session:usr_1', admin: false, workspaceId: 'ws_1', memoryId: 'm_1' });
    expect(callerOf({ ...member, credential: 'ck_live', subject: 'key_9', role: 'tenant_admin' })).toMatchObject({ owner: 'ck_live:key_9', admin: true });
    expect(callerOf({ ...member, role: 'admin' }).admin).toBe(true);
    // The same subject under another credential kind is another owner.
    expect(callerOf({ ...member, credential: 'oauth' }).owner).not.toBe(callerOf(member).owner);
  });
});
