import { AdminCreateKeyBodySchema, AdminCreateTenantBodySchema, AdminKeyLookupSchema, AdminPutMemoryBodySchema, AdminRotateKeyBodySchema } from './admin';
import { IdentityClaimsSchema } from './identity';

const issuesOf = (r: { success: boolean; error?: { issues: Array<{ path: PropertyKey[] }> } }) => (r.error?.issues ?? []).map((i) => i.path.join('.'));

describe('admin API contract', () => {
  it('requires type and name on key creation (name not blank), and refuses unknown fields', () => {
    expect(issuesOf(AdminCreateKeyBodySchema.safeParse({}))).toEqual(expect.arrayContaining(['type', 'name']));
    expect(AdminCreateKeyBodySchema.safeParse({ type: 'live', name: '   ' }).success).toBe(false);
    expect(AdminCreateKeyBodySchema.safeParse({ type: 'live', name: 'ci', owner: 'x' }).success).toBe(false);
    expect(AdminCreateKeyBodySchema.parse({ type: 'memory', name: ' edge ', memory_id: 'm1', client_token: 'iss1-abc' })).toMatchObject({ name: 'edge' });
  });

  it('takes a client token of 1 to 128 of [A-Za-z0-9._:-] only', () => {
    expect(AdminRotateKeyBodySchema.safeParse({ client_token: 'a'.repeat(128) }).success).toBe(true);
    expect(AdminRotateKeyBodySchema.safeParse({ client_token: 'a'.repeat(129) }).success).toBe(false);
    expect(AdminRotateKeyBodySchema.safeParse({ client_token: 'has space' }).success).toBe(false);
    expect(AdminRotateKeyBodySchema.safeParse({}).success).toBe(true);
  });

  it('requires a tenant name, and a memory name and DNS hostname', () => {
    expect(issuesOf(AdminCreateTenantBodySchema.safeParse({ tenant_id: 'acme' }))).toEqual(['name']);
    expect(issuesOf(AdminPutMemoryBodySchema.safeParse({ name: 'KB', hostname: 'not a host' }))).toEqual(['hostname']);
  });

  it('reads answers leniently: fields it does not know are dropped, missing ones refused', () => {
    const view = {
      key_id: 'key_1', name: 'ci', type: 'live', prefix: 'ck_live_ab', status: 'active', memory_id: null, workspace_id: null,
      project_id: null, scopes: {}, ip_allowlist: [], app_permissions: {}, rate_limit: null, expires_at: null, revoked_at: null,
      replaced_by: null, rotated_from: null, created_by: 'admin-api', created_at: '2026-11-24T00:00:00Z', future_field: 1,
    };
    expect(AdminKeyLookupSchema.parse({ api_keys: [view] }).api_keys[0]).not.toHaveProperty('future_field');
    expect(AdminKeyLookupSchema.safeParse({ api_keys: [{ key_id: 'key_1' }] }).success).toBe(false);
  });

  it('accepts identity claims only with a tenant and a known credential kind', () => {
    const claims = { tenant_id: 't', workspace_id: 'w', memory_id: 'm', credential: 'mk', subject: 'key_1', role: 'memory' };
    expect(IdentityClaimsSchema.safeParse(claims).success).toBe(true);
    expect(IdentityClaimsSchema.safeParse({ ...claims, tenant_id: '' }).success).toBe(false);
    expect(IdentityClaimsSchema.safeParse({ ...claims, credential: 'root' }).success).toBe(false);
  });
});
