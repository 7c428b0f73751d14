/**
 * The gateway's internal admin API, as the operator uses it. A separate listener of the gateway, authenticated
 * with the operator's own service credential (`Authorization: Bearer <admin token>`), never exposed publicly.
 */

export type KeyType = 'live' | 'test' | 'ephemeral' | 'memory';

export interface KeyScopes {
  modules?: string[];
  memories?: string[];
  access?: 'read' | 'write' | 'read_write';
}

export interface CreateKeyRequest {
  type: KeyType;
  name: string;
  memory_id?: string;
  scopes?: KeyScopes;
  ip_allowlist?: string[];
  app_permissions?: Record<string, unknown>;
  expires_at?: string;
  /**
   * Idempotency token (1 to 128 of `[A-Za-z0-9._:-]`): the platform makes at most one key per tenant with it,
   * and `findKeyByClientToken` finds that key even when the answer to the call was never read.
   */
  client_token?: string;
}

export interface CreatedKey {
  key_id: string;
  /** Plaintext, returned once. Never log it. */
  key: string;
  prefix: string;
  type: KeyType;
  memory_id: string | null;
  expires_at: string | null;
}

export interface RotatedKey {
  key_id: string;
  /** Plaintext of the replacement, returned once. Never log it. */
  key: string;
  replaced_key_id: string;
  replaced_key_expires_at: string | null;
}

export interface KeyRecord {
  key_id: string;
  type?: KeyType;
  prefix?: string;
  memory_id?: string | null;
  revoked_at?: string | null;
  expires_at?: string | null;
  [field: string]: unknown;
}

export interface MemoryRecord {
  memory_id: string;
  hostname: string;
  workspace_id: string;
}

export interface PlatformAdmin {
  /** Creates the tenant if it does not exist (idempotent on tenant_id). */
  ensureTenant(tenantId: string, name: string): Promise<void>;
  /** Creates or updates a memory (idempotent). Throws `PlatformError` with status 409 when the hostname is taken. */
  putMemory(tenantId: string, memoryId: string, body: { name: string; hostname: string; workspace_id?: string }): Promise<MemoryRecord>;
  /** Deletes a memory and revokes its keys; resolves when it is already gone. */
  deleteMemory(tenantId: string, memoryId: string, retainData: boolean): Promise<void>;
  /**
   * Throws `PlatformError` 409 `CONFLICT` with `details.key_id` when `client_token` already made a key (whose
   * plaintext is not returned again): see `replayedKeyId`.
   */
  createKey(tenantId: string, body: CreateKeyRequest): Promise<CreatedKey>;
  /** `clientToken` as for `createKey` (a replay is answered before any other check of the key but its existence). */
  rotateKey(tenantId: string, keyId: string, overlapSeconds: number, clientToken?: string): Promise<RotatedKey>;
  /** The key record without plaintext, or `undefined` when the platform does not know the key. */
  getKey(tenantId: string, keyId: string): Promise<KeyRecord | undefined>;
  /** The key a create or rotate call with this client token made (revoked or not), or `undefined` if none. */
  findKeyByClientToken(tenantId: string, clientToken: string): Promise<KeyRecord | undefined>;
  /** Revokes a key at once (idempotent). */
  revokeKey(tenantId: string, keyId: string): Promise<void>;
}

/** A refusal or failure of the admin API. `kind` feeds the reconcile error metric. */
export class PlatformError extends Error {
  readonly kind = 'platform';
  constructor(
    readonly operation: string,
    readonly status: number,
    readonly code: string,
    message: string,
    /** The error's `details`, when the platform sent any. */
    readonly details?: unknown,
  ) {
    super(`platform ${operation}: ${status} ${code}: ${message}`);
    this.name = 'PlatformError';
  }
}

export function isPlatformStatus(err: unknown, status: number): err is PlatformError {
  return err instanceof PlatformError && err.status === status;
}

/**
 * The key a create or rotate call's client token had already made, when the error is the platform's answer to
 * such a replay (409 with `details.key_id`); `undefined` for any other error, a 409 for another reason included.
 */
export function replayedKeyId(err: unknown): string | undefined {
  if (!isPlatformStatus(err, 409)) return undefined;
  const keyId = (err.details as { key_id?: unknown } | undefined)?.key_id;
  return typeof keyId === 'string' && keyId ? keyId : undefined;
}

/**
 * The platform answered and refused (4xx): a refused create or rotate made no key. Anything else (no answer,
 * a 5xx) leaves open whether a key was made.
 */
export function isPlatformRefusal(err: unknown): err is PlatformError {
  return err instanceof PlatformError && err.status >= 400 && err.status < 500;
}

export interface HttpPlatformAdminOptions {
  /** Base URL of the gateway's internal admin listener, e.g. http://lore-gateway-admin:8082 */
  baseUrl: string;
  /** The operator's service credential. */
  token: string;
  timeoutMs?: number;
  /** Called after each call with its operation name, HTTP status (0 for a network failure) and duration. */
  observe?: (operation: string, status: number, seconds: number) => void;
}

/** `PlatformAdmin` over HTTP (Node's fetch). */
export class HttpPlatformAdmin implements PlatformAdmin {
  private readonly base: string;

  constructor(private readonly opts: HttpPlatformAdminOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
  }

  async ensureTenant(tenantId: string, name: string): Promise<void> {
    await this.call('ensure_tenant', 'POST', '/internal/v1/tenants', { tenant_id: tenantId, name });
  }

  async putMemory(tenantId: string, memoryId: string, body: { name: string; hostname: string; workspace_id?: string }): Promise<MemoryRecord> {
    return (await this.call('put_memory', 'PUT', `${this.tenantPath(tenantId)}/memories/${enc(memoryId)}`, body)) as MemoryRecord;
  }

  async deleteMemory(tenantId: string, memoryId: string, retainData: boolean): Promise<void> {
    await this.call('delete_memory', 'DELETE', `${this.tenantPath(tenantId)}/memories/${enc(memoryId)}?retain_data=${retainData}`, undefined, [404]);
  }

  async createKey(tenantId: string, body: CreateKeyRequest): Promise<CreatedKey> {
    return (await this.call('create_key', 'POST', `${this.tenantPath(tenantId)}/keys`, body)) as CreatedKey;
  }

  async rotateKey(tenantId: string, keyId: string, overlapSeconds: number, clientToken?: string): Promise<RotatedKey> {
    const body = clientToken === undefined ? { overlap_seconds: overlapSeconds } : { overlap_seconds: overlapSeconds, client_token: clientToken };
    return (await this.call('rotate_key', 'POST', `${this.tenantPath(tenantId)}/keys/${enc(keyId)}/rotate`, body)) as RotatedKey;
  }

  async getKey(tenantId: string, keyId: string): Promise<KeyRecord | undefined> {
    const r = await this.call('get_key', 'GET', `${this.tenantPath(tenantId)}/keys/${enc(keyId)}`, undefined, [404]);
    return r === undefined ? undefined : (r as KeyRecord);
  }

  async findKeyByClientToken(tenantId: string, clientToken: string): Promise<KeyRecord | undefined> {
    const r = (await this.call('find_key', 'GET', `${this.tenantPath(tenantId)}/keys?client_token=${enc(clientToken)}`)) as { api_keys?: KeyRecord[] } | undefined;
    return r?.api_keys?.[0];
  }

  async revokeKey(tenantId: string, keyId: string): Promise<void> {
    await this.call('revoke_key', 'DELETE', `${this.tenantPath(tenantId)}/keys/${enc(keyId)}`, undefined, [404]);
  }

  private tenantPath(tenantId: string): string {
    return `/internal/v1/tenants/${enc(tenantId)}`;
  }

  /** Resolves the JSON body, `undefined` for an empty body or for a status listed in `absentOk`. */
  private async call(operation: string, method: string, path: string, body?: unknown, absentOk: number[] = []): Promise<unknown> {
    let status = 0;
    const started = process.hrtime.bigint();
    try {
      const res = await fetch(`${this.base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.opts.token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 15_000),
      });
      status = res.status;
      const text = await res.text();
      if (absentOk.includes(res.status)) return undefined;
      if (res.status < 200 || res.status >= 300) {
        const { code, message, details } = errorOf(text);
        throw new PlatformError(operation, res.status, code, message, details);
      }
      return text ? (JSON.parse(text) as unknown) : undefined;
    } catch (err) {
      if (err instanceof PlatformError) throw err;
      throw new PlatformError(operation, 0, 'UNREACHABLE', err instanceof Error ? err.message : String(err));
    } finally {
      this.opts.observe?.(operation, status, Number(process.hrtime.bigint() - started) / 1e9);
    }
  }
}

function enc(s: string): string {
  return encodeURIComponent(s);
}

function errorOf(text: string): { code: string; message: string; details?: unknown } {
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string; details?: unknown } };
    return { code: body.error?.code ?? 'ERROR', message: body.error?.message ?? text.slice(0, 300), details: body.error?.details };
  } catch {
    return { code: 'ERROR', message: text.slice(0, 300) };
  }
}
