import {
  AdminCreatedKeySchema,
  AdminErrorBodySchema,
  AdminKeyLookupSchema,
  AdminMemorySchema,
  AdminRotatedKeySchema,
  AdminTenantSchema,
  KeyViewSchema,
  type AdminCreateKeyBody,
  type AdminCreatedKey,
  type AdminMemory,
  type AdminPutMemoryBody,
  type AdminRotatedKey,
  type KeyView,
} from '@lore/contracts';
import type { z } from 'zod';

/**
 * The gateway's internal admin API, as the operator uses it. A separate listener of the gateway, authenticated
 * with the operator's own service credential (`Authorization: Bearer <admin token>`), never exposed publicly.
 */

// Requests and answers are the admin API's contract in @lore/contracts, shared with the gateway that serves it.

export interface PlatformAdmin {
  /** Creates the tenant if it does not exist (idempotent on tenant_id). */
  ensureTenant(tenantId: string, name: string): Promise<void>;
  /** Creates or updates a memory (idempotent). Throws `PlatformError` with status 409 when the hostname is taken. */
  putMemory(tenantId: string, memoryId: string, body: AdminPutMemoryBody): Promise<AdminMemory>;
  /** Deletes a memory and revokes its keys; resolves when it is already gone. */
  deleteMemory(tenantId: string, memoryId: string, retainData: boolean): Promise<void>;
  /**
   * Throws `PlatformError` 409 `CONFLICT` with `details.key_id` when `client_token` already made a key (whose
   * plaintext is not returned again): see `replayedKeyId`.
   */
  createKey(tenantId: string, body: AdminCreateKeyBody): Promise<AdminCreatedKey>;
  /** `clientToken` as for `createKey` (a replay is answered before any other check of the key but its existence). */
  rotateKey(tenantId: string, keyId: string, overlapSeconds: number, clientToken?: string): Promise<AdminRotatedKey>;
  /** The key record without plaintext, or `undefined` when the platform does not know the key. */
  getKey(tenantId: string, keyId: string): Promise<KeyView | undefined>;
  /** The key a create or rotate call with this client token made (revoked or not), or `undefined` if none. */
  findKeyByClientToken(tenantId: string, clientToken: string): Promise<KeyView | undefined>;
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
    super(`platform ${operation}: ${status} ${code}: ${message}${detailsText(details)}`);
    this.name = 'PlatformError';
  }
}

/** The admin API's validation details as words (`name: too long`), so a condition message says which field. */
function detailsText(details: unknown): string {
  if (!Array.isArray(details) || details.length === 0) return '';
  const parts = details
    .slice(0, 5)
    .map((d) => (d && typeof d === 'object' ? `${String((d as { path?: unknown }).path ?? '')}: ${String((d as { message?: unknown }).message ?? '')}` : String(d)))
    .map((t) => t.slice(0, 200));
  return ` (${parts.join('; ')})`;
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
    await this.call('ensure_tenant', 'POST', '/internal/v1/tenants', AdminTenantSchema, { tenant_id: tenantId, name });
  }

  async putMemory(tenantId: string, memoryId: string, body: AdminPutMemoryBody): Promise<AdminMemory> {
    return this.call('put_memory', 'PUT', `${this.tenantPath(tenantId)}/memories/${enc(memoryId)}`, AdminMemorySchema, body);
  }

  async deleteMemory(tenantId: string, memoryId: string, retainData: boolean): Promise<void> {
    await this.callOrAbsent('delete_memory', 'DELETE', `${this.tenantPath(tenantId)}/memories/${enc(memoryId)}?retain_data=${retainData}`, undefined);
  }

  async createKey(tenantId: string, body: AdminCreateKeyBody): Promise<AdminCreatedKey> {
    return this.call('create_key', 'POST', `${this.tenantPath(tenantId)}/keys`, AdminCreatedKeySchema, body);
  }

  async rotateKey(tenantId: string, keyId: string, overlapSeconds: number, clientToken?: string): Promise<AdminRotatedKey> {
    const body = clientToken === undefined ? { overlap_seconds: overlapSeconds } : { overlap_seconds: overlapSeconds, client_token: clientToken };
    return this.call('rotate_key', 'POST', `${this.tenantPath(tenantId)}/keys/${enc(keyId)}/rotate`, AdminRotatedKeySchema, body);
  }

  async getKey(tenantId: string, keyId: string): Promise<KeyView | undefined> {
    return this.callOrAbsent('get_key', 'GET', `${this.tenantPath(tenantId)}/keys/${enc(keyId)}`, KeyViewSchema);
  }

  async findKeyByClientToken(tenantId: string, clientToken: string): Promise<KeyView | undefined> {
    const r = await this.call('find_key', 'GET', `${this.tenantPath(tenantId)}/keys?client_token=${enc(clientToken)}`, AdminKeyLookupSchema);
    return r.api_keys[0];
  }

  async revokeKey(tenantId: string, keyId: string): Promise<void> {
    await this.callOrAbsent('revoke_key', 'DELETE', `${this.tenantPath(tenantId)}/keys/${enc(keyId)}`, undefined);
  }

  private tenantPath(tenantId: string): string {
    return `/internal/v1/tenants/${enc(tenantId)}`;
  }

  /** The answer parsed with its contract schema (none for an operation answered with 204). */
  private async call<S extends z.ZodType>(operation: string, method: string, path: string, schema: S, body?: unknown): Promise<z.output<S>>;
  private async call(operation: string, method: string, path: string, schema: undefined, body?: unknown): Promise<void>;
  private async call(operation: string, method: string, path: string, schema: z.ZodType | undefined, body?: unknown): Promise<unknown> {
    const answer = await this.send(operation, method, path, body, false);
    return parseAnswer(operation, answer!, schema);
  }

  /** As `call`, but a 404 resolves `undefined` (the thing is already gone or never existed). */
  private async callOrAbsent<S extends z.ZodType>(operation: string, method: string, path: string, schema: S): Promise<z.output<S> | undefined>;
  private async callOrAbsent(operation: string, method: string, path: string, schema: undefined): Promise<void>;
  private async callOrAbsent(operation: string, method: string, path: string, schema: z.ZodType | undefined): Promise<unknown> {
    const answer = await this.send(operation, method, path, undefined, true);
    return answer === undefined ? undefined : parseAnswer(operation, answer, schema);
  }

  /** The status and body of a 2xx answer; `undefined` for a 404 when `absentOk`. Anything else throws. */
  private async send(operation: string, method: string, path: string, body: unknown, absentOk: boolean): Promise<{ status: number; text: string } | undefined> {
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
      if (absentOk && res.status === 404) return undefined;
      if (res.status < 200 || res.status >= 300) {
        const { code, message, details } = errorOf(text);
        throw new PlatformError(operation, res.status, code, message, details);
      }
      return { status: res.status, text };
    } catch (err) {
      if (err instanceof PlatformError) throw err;
      throw new PlatformError(operation, 0, 'UNREACHABLE', err instanceof Error ? err.message : String(err));
    } finally {
      this.opts.observe?.(operation, status, Number(process.hrtime.bigint() - started) / 1e9);
    }
  }
}

/**
 * A 2xx answer that does not match the contract is a `PlatformError` with code `MALFORMED_ANSWER` and the answer's
 * status, never a crash: the status (2xx, not a refusal) says the call may have taken effect, as a lost answer does.
 */
function parseAnswer(operation: string, answer: { status: number; text: string }, schema: z.ZodType | undefined): unknown {
  if (!schema) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(answer.text);
  } catch {
    throw new PlatformError(operation, answer.status, 'MALFORMED_ANSWER', 'the answer is not JSON');
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`);
    throw new PlatformError(operation, answer.status, 'MALFORMED_ANSWER', `the answer does not match the admin API contract: ${issues.slice(0, 5).join('; ')}`, { issues });
  }
  return parsed.data;
}

function enc(s: string): string {
  return encodeURIComponent(s);
}

/** The refusal's `{error:{code,message,details}}`; a body of another shape (a proxy's page) is kept as the message. */
function errorOf(text: string): { code: string; message: string; details?: unknown } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { code: 'ERROR', message: text.slice(0, 300) };
  }
  const parsed = AdminErrorBodySchema.safeParse(json);
  if (!parsed.success) return { code: 'ERROR', message: text.slice(0, 300) };
  const { code, message, details } = parsed.data.error;
  return { code, message, details };
}
