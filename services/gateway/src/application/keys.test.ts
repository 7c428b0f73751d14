import type { ApiKeyRecord } from '../store/api-keys';
import { presentKey } from './keys';

const base: ApiKeyRecord = {
  key_id: 'key_old', tenant_id: 't', type: 'live', name: 'k', key_hash: 'h', prefix: 'ck_live_abcd', memory_id: null,
  workspace_id: null, project_id: null, scopes: {}, ip_allowlist: [], app_permissions: {}, rate_limit: null,
  expires_at: null, revoked_at: null, replaced_by: null, rotated_from: null, created_by: 'admin', created_at: '2026-01-01T00:00:00.000Z',
  client_token: null,
};
const now = Date.parse('2026-06-01T12:00:00.000Z');

describe('presentKey status', () => {
  it('shows the original of a rotation as revoked once its overlap has ended, revoked at the end of the overlap', () => {
    const k = presentKey({ ...base, replaced_by: 'key_new', expires_at: '2026-06-01T11:00:00.000Z' }, now);
    expect(k).toMatchObject({ status: 'revoked', revoked_at: '2026-06-01T11:00:00.000Z', replaced_by: 'key_new' });
  });

  it('keeps the original active during the overlap', () => {
    expect(presentKey({ ...base, replaced_by: 'key_new', expires_at: '2026-06-01T13:00:00.000Z' }, now)).toMatchObject({ status: 'active', revoked_at: null });
  });

  it('shows a key past its own expiry (never rotated) as expired, and an explicit revocation as it happened', () => {
    expect(presentKey({ ...base, expires_at: '2026-06-01T11:00:00.000Z' }, now)).toMatchObject({ status: 'expired', revoked_at: null });
    const revokedDuringOverlap = { ...base, replaced_by: 'key_new', expires_at: '2026-06-01T13:00:00.000Z', revoked_at: '2026-06-01T10:00:00.000Z' };
    expect(presentKey(revokedDuringOverlap, now)).toMatchObject({ status: 'revoked', revoked_at: '2026-06-01T10:00:00.000Z' });
  });
});
