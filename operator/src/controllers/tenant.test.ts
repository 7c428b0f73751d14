import { InMemoryPlatformAdmin } from '../platform/in-memory-admin';
import { TenantRegistry, resolveTenant } from './tenant';

const ns = (labels: Record<string, string> = {}, annotations: Record<string, string> = {}) => ({ metadata: { name: 'team', labels, annotations } });

describe('resolveTenant', () => {
  it('reads the label, or the annotation, of the namespace', () => {
    expect(resolveTenant(ns({ 'lore.dev/tenant': 'acme' }))).toEqual({ ok: true, tenantId: 'acme' });
    expect(resolveTenant(ns({}, { 'lore.dev/tenant': 'acme_corp.eu' }))).toEqual({ ok: true, tenantId: 'acme_corp.eu' });
  });

  it('refuses a namespace without a tenant, with two different ones, or with an invalid id', () => {
    expect(resolveTenant(ns())).toMatchObject({ ok: false, reason: 'TenantNotAssigned' });
    expect(resolveTenant(ns({ 'lore.dev/tenant': 'a' }, { 'lore.dev/tenant': 'b' }))).toMatchObject({ ok: false, reason: 'InvalidTenant' });
    expect(resolveTenant(ns({}, { 'lore.dev/tenant': 'has space' }))).toMatchObject({ ok: false, reason: 'InvalidTenant' });
  });
});

describe('TenantRegistry', () => {
  it('creates each tenant in the platform once per process', async () => {
    const admin = new InMemoryPlatformAdmin();
    const reg = new TenantRegistry(admin);
    await reg.ensure('acme');
    await reg.ensure('acme');
    await reg.ensure('beta');
    expect(admin.calls).toEqual(['ensure_tenant', 'ensure_tenant']);
  });

  it('shares one call between concurrent first uses', async () => {
    const admin = new InMemoryPlatformAdmin();
    const reg = new TenantRegistry(admin);
    await Promise.all([reg.ensure('acme'), reg.ensure('acme'), reg.ensure('acme')]);
    expect(admin.calls).toEqual(['ensure_tenant']);
  });

  it('retries a tenant whose creation failed', async () => {
    const admin = new InMemoryPlatformAdmin();
    admin.failNext.set('ensure_tenant', 1);
    const reg = new TenantRegistry(admin);
    await expect(reg.ensure('acme')).rejects.toThrow('injected failure');
    await reg.ensure('acme');
    expect(admin.tenants.has('acme')).toBe(true);
  });
});
