import type { GatewayContext } from '../context';
import { createTenant } from './tenancy';
import { createKey } from './keys';

/**
 * First start of the embedded mode: a dev tenant (default workspace and primary memory) and a `ck_test_` key.
 * Idempotent on the tenant; a new key is minted on every call because plaintext is never stored.
 */
export async function ensureDevTenant(ctx: GatewayContext, opts: { tenantId?: string; name?: string } = {}): Promise<{ tenant_id: string; api_key: string; key_id: string; created: boolean }> {
  const { tenant, created } = await createTenant(ctx, { tenant_id: opts.tenantId ?? 'dev', name: opts.name ?? 'Development' });
  const { record, plaintext } = await createKey(ctx, tenant.tenant_id, { type: 'test', name: 'embedded dev key' }, 'embedded');
  return { tenant_id: tenant.tenant_id, api_key: plaintext, key_id: record.key_id, created };
}
