import { randomBytes } from 'node:crypto';
import type { AdminCreateKeyBody, AdminCreatedKey, AdminMemory, AdminPutMemoryBody, AdminRotatedKey, KeyType, KeyView } from '@lore/contracts';
import { PlatformError, type PlatformAdmin } from './admin-client';

interface StoredKey {
  key_id: string;
  type: KeyType;
  prefix: string;
  memory_id: string | null;
  revoked_at: string | null;
  expires_at: string | null;
  created_at: string;
  tenant_id: string;
  plaintext: string;
  request: AdminCreateKeyBody;
  client_token?: string;
  replaced_by?: string;
  rotated_from?: string;
}

/**
 * An in-process `PlatformAdmin` with the admin API's observable rules (idempotent tenants and memories, hostname
 * uniqueness, revocation, rotation with an overlap). Used by the unit tests of the controllers; the integration
 * suites run the real gateway instead.
 */
export class InMemoryPlatformAdmin implements PlatformAdmin {
  readonly tenants = new Map<string, string>();
  readonly memories = new Map<string, AdminMemory & { tenant_id: string; name: string; deleted?: boolean; retained?: boolean }>();
  readonly keys = new Map<string, StoredKey>();
  readonly calls: string[] = [];
  /** Set to make the next call of an operation fail (transient errors in tests). */
  readonly failNext = new Map<string, number>();
  /** Set to make the next call of an operation take effect but lose its answer (a timeout after the commit). */
  readonly loseAnswerNext = new Map<string, number>();

  async ensureTenant(tenantId: string, name: string): Promise<void> {
    this.enter('ensure_tenant');
    if (!this.tenants.has(tenantId)) this.tenants.set(tenantId, name);
  }

  async putMemory(tenantId: string, memoryId: string, body: AdminPutMemoryBody): Promise<AdminMemory> {
    this.enter('put_memory');
    this.requireTenant(tenantId);
    for (const m of this.memories.values()) {
      if (!m.deleted && m.hostname === body.hostname && m.memory_id !== memoryId) {
        throw new PlatformError('put_memory', 409, 'CONFLICT', `hostname ${body.hostname} belongs to another memory`);
      }
    }
    const existing = this.memories.get(memoryId);
    if (existing && existing.tenant_id !== tenantId) throw new PlatformError('put_memory', 404, 'NOT_FOUND', 'memory not found');
    const record = { memory_id: memoryId, hostname: body.hostname, workspace_id: body.workspace_id ?? existing?.workspace_id ?? `ws_${tenantId}`, tenant_id: tenantId, name: body.name };
    this.memories.set(memoryId, record);
    return { memory_id: record.memory_id, hostname: record.hostname, workspace_id: record.workspace_id };
  }

  async deleteMemory(tenantId: string, memoryId: string, retainData: boolean): Promise<void> {
    this.enter('delete_memory');
    const m = this.memories.get(memoryId);
    if (!m || m.tenant_id !== tenantId) return;
    m.deleted = true;
    m.retained = retainData;
    for (const k of this.keys.values()) if (k.memory_id === memoryId && !k.revoked_at) k.revoked_at = new Date().toISOString();
  }

  async createKey(tenantId: string, body: AdminCreateKeyBody): Promise<AdminCreatedKey> {
    this.enter('create_key');
    this.requireTenant(tenantId);
    if (body.type === 'memory') {
      const m = body.memory_id ? this.memories.get(body.memory_id) : undefined;
      if (!m || m.deleted || m.tenant_id !== tenantId) throw new PlatformError('create_key', 404, 'NOT_FOUND', 'memory not found');
    }
    this.refuseReplay('create_key', tenantId, body.client_token);
    const key = this.store(tenantId, body, body.expires_at ?? (body.type === 'ephemeral' ? new Date(Date.now() + 86_400_000).toISOString() : null), body.client_token);
    this.answer('create_key');
    return { key_id: key.key_id, key: key.plaintext, prefix: key.prefix, type: body.type, memory_id: body.memory_id ?? null, expires_at: key.expires_at };
  }

  async rotateKey(tenantId: string, keyId: string, overlapSeconds: number, clientToken?: string): Promise<AdminRotatedKey> {
    this.enter('rotate_key');
    const old = this.keys.get(keyId);
    if (!old || old.tenant_id !== tenantId) throw new PlatformError('rotate_key', 404, 'NOT_FOUND', 'key not found');
    // As in the gateway: a replayed token is answered first, then the state of the key.
    this.refuseReplay('rotate_key', tenantId, clientToken);
    if (old.revoked_at) throw new PlatformError('rotate_key', 409, 'CONFLICT', 'the key is revoked');
    if (old.expires_at && Date.parse(old.expires_at) <= Date.now()) throw new PlatformError('rotate_key', 409, 'CONFLICT', 'the key has expired');
    if (old.replaced_by) throw new PlatformError('rotate_key', 409, 'CONFLICT', `the key was already rotated (replacement ${old.replaced_by})`);
    const replacement = this.store(tenantId, old.request, old.expires_at, clientToken);
    replacement.rotated_from = keyId;
    old.expires_at = new Date(Date.now() + overlapSeconds * 1000).toISOString();
    old.replaced_by = replacement.key_id;
    this.answer('rotate_key');
    return { key_id: replacement.key_id, key: replacement.plaintext, prefix: replacement.prefix, replaced_key_id: keyId, replaced_key_expires_at: old.expires_at };
  }

  async getKey(tenantId: string, keyId: string): Promise<KeyView | undefined> {
    this.enter('get_key');
    const k = this.keys.get(keyId);
    if (!k || k.tenant_id !== tenantId) return undefined;
    return record(k);
  }

  async findKeyByClientToken(tenantId: string, clientToken: string): Promise<KeyView | undefined> {
    this.enter('find_key');
    const k = this.byToken(tenantId, clientToken);
    return k ? record(k) : undefined;
  }

  async revokeKey(tenantId: string, keyId: string): Promise<void> {
    this.enter('revoke_key');
    const k = this.keys.get(keyId);
    if (k && k.tenant_id === tenantId && !k.revoked_at) k.revoked_at = new Date().toISOString();
  }

  /** Keys of a tenant that would authenticate now. */
  workingKeys(tenantId?: string): StoredKey[] {
    const now = Date.now();
    return [...this.keys.values()].filter(
      (k) => (!tenantId || k.tenant_id === tenantId) && !k.revoked_at && (!k.expires_at || Date.parse(k.expires_at) > now),
    );
  }

  private byToken(tenantId: string, clientToken: string): StoredKey | undefined {
    for (const k of this.keys.values()) if (k.tenant_id === tenantId && k.client_token === clientToken) return k;
    return undefined;
  }

  private refuseReplay(operation: string, tenantId: string, clientToken: string | undefined): void {
    const existing = clientToken === undefined ? undefined : this.byToken(tenantId, clientToken);
    if (existing) {
      throw new PlatformError(operation, 409, 'CONFLICT', `client_token was already used: it made key ${existing.key_id}`, { key_id: existing.key_id });
    }
  }

  private store(tenantId: string, request: AdminCreateKeyBody, expiresAt: string | null, clientToken?: string): StoredKey {
    const prefix = request.type === 'memory' ? 'mk_' : request.type === 'ephemeral' ? 'ck_eph_' : `ck_${request.type}_`;
    const keyId = `key_${randomBytes(6).toString('hex')}`;
    const stored: StoredKey = {
      key_id: keyId,
      type: request.type,
      prefix: `${prefix}${randomBytes(3).toString('hex')}`,
      memory_id: request.memory_id ?? null,
      revoked_at: null,
      expires_at: expiresAt,
      created_at: new Date().toISOString(),
      tenant_id: tenantId,
      plaintext: `${prefix}${randomBytes(16).toString('hex')}`,
      request,
      ...(clientToken === undefined ? {} : { client_token: clientToken }),
    };
    this.keys.set(keyId, stored);
    return stored;
  }

  private requireTenant(tenantId: string): void {
    if (!this.tenants.has(tenantId)) throw new PlatformError('tenant', 404, 'NOT_FOUND', 'tenant not found');
  }

  private answer(operation: string): void {
    const n = this.loseAnswerNext.get(operation) ?? 0;
    if (n > 0) {
      this.loseAnswerNext.set(operation, n - 1);
      throw new PlatformError(operation, 0, 'UNREACHABLE', 'injected loss of the answer');
    }
  }

  private enter(operation: string): void {
    this.calls.push(operation);
    const n = this.failNext.get(operation) ?? 0;
    if (n > 0) {
      this.failNext.set(operation, n - 1);
      throw new PlatformError(operation, 503, 'UNAVAILABLE', 'injected failure');
    }
  }
}

/** The key as the admin API presents it (KeyViewSchema), with the same status rules as the gateway's. */
function record(k: StoredKey, now = Date.now()): KeyView {
  const ended = k.expires_at !== null && Date.parse(k.expires_at) <= now;
  const rotatedOut = ended && k.replaced_by !== undefined && k.revoked_at === null;
  const r = k.request;
  return {
    key_id: k.key_id,
    name: r.name,
    type: r.type,
    prefix: k.prefix,
    status: k.revoked_at || rotatedOut ? 'revoked' : ended ? 'expired' : 'active',
    memory_id: k.memory_id,
    workspace_id: r.workspace_id ?? null,
    project_id: r.project_id ?? null,
    scopes: r.scopes ?? {},
    ip_allowlist: r.ip_allowlist ?? [],
    app_permissions: r.app_permissions ?? {},
    rate_limit: r.rate_limit ?? null,
    expires_at: k.expires_at,
    revoked_at: rotatedOut ? k.expires_at : k.revoked_at,
    replaced_by: k.replaced_by ?? null,
    rotated_from: k.rotated_from ?? null,
    created_by: 'admin-api',
    created_at: k.created_at,
  };
}
