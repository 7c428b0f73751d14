import type { GatewayContext } from '../context';
import { getUserByEmail } from '../store/users';
import { createTenant } from './tenancy';
import { createKey } from './keys';
import { createUser, resetPassword } from './identity';
import { randomBase62 } from '../domain/credentials';

/**
 * First start of the embedded mode: a dev tenant (default workspace and primary memory) and a `ck_test_` key.
 * Idempotent on the tenant; a new key is minted on every call because plaintext is never stored.
 */
export async function ensureDevTenant(ctx: GatewayContext, opts: { tenantId?: string; name?: string } = {}): Promise<{ tenant_id: string; api_key: string; key_id: string; created: boolean }> {
  const { tenant, created } = await createTenant(ctx, { tenant_id: opts.tenantId ?? 'dev', name: opts.name ?? 'Development' });
  const { record, plaintext } = await createKey(ctx, tenant.tenant_id, { type: 'test', name: 'embedded dev key' }, 'embedded');
  return { tenant_id: tenant.tenant_id, api_key: plaintext, key_id: record.key_id, created };
}

/**
 * The dev tenant's administrator, who signs in to the portal routes (keys, OAuth clients, passwords). Idempotent on
 * the e-mail address. `knownPassword` is the password the caller holds for the account (embedded mode keeps it in
 * `dev-credentials.json`): a new account gets it (or a generated one without it); an existing account keeps its
 * password when the caller holds one, and gets a generated one otherwise (its sessions end, as on any reset).
 * `password` is the account's password when this call set it, else null. An address of another tenant is CONFLICT.
 */
export async function ensureDevAdmin(
  ctx: GatewayContext,
  tenantId: string,
  opts: { email: string; knownPassword?: string },
): Promise<{ user_id: string; email: string; password: string | null; created: boolean }> {
  const existing = await getUserByEmail(ctx.db, tenantId, opts.email);
  if (existing && opts.knownPassword !== undefined) return { user_id: existing.user_id, email: existing.email, password: null, created: false };
  if (existing) {
    const reset = await resetPassword(ctx, tenantId, existing.email);
    if (reset) return { user_id: existing.user_id, email: existing.email, password: reset.password, created: false };
  }
  const password = opts.knownPassword ?? randomBase62(20);
  const user = await createUser(ctx, tenantId, { email: opts.email, password, role: 'admin' });
  return { user_id: user.user_id, email: user.email, password, created: true };
}
