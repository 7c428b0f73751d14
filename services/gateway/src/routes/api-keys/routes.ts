import { AppError } from '@lore/runtime';
import { z } from 'zod';
import type { CreateKeyInput } from '../../application/keys';
import type { ApiKeyRecord } from '../../store/api-keys';
import { SESSION, err, route, type SessionGuard } from '../../http/route';
import { createKeyBody, createdKeyView, keyListView, keyView, presentCreatedKey, presentKeyList, presentKeyView, presentRotatedKey, rotateKeyBody, rotatedKeyView } from './schema';

/**
 * The list answers the newest keys up to this many (revoked and expired ones included); spec 1 names no paging
 * for it. `count` is the tenant's number of keys, so a list cut short says so; an older key is read by its id.
 */
export const LIST_LIMIT = 1000;

export interface ApiKeyRouteDeps {
  session: SessionGuard;
  keys: {
    create(tenantId: string, input: CreateKeyInput, createdBy: string): Promise<{ record: ApiKeyRecord; plaintext: string }>;
    list(tenantId: string, limit: number): Promise<ApiKeyRecord[]>;
    count(tenantId: string): Promise<number>;
    get(tenantId: string, keyId: string): Promise<ApiKeyRecord | null>;
    rotate(tenantId: string, keyId: string, overlapSeconds: number | undefined, createdBy: string): Promise<{ record: ApiKeyRecord; plaintext: string; replaced: ApiKeyRecord }>;
    revoke(tenantId: string, keyId: string): Promise<ApiKeyRecord | null>;
  };
}

const keyId = z.object({ key_id: z.string() });

/** Key management for signed-in administrators (spec 1: portal session only; an API key gets 404 here). */
export function apiKeyRoutes(deps: ApiKeyRouteDeps) {
  const admin = deps.session({ admin: true });
  return [
    route({
      method: 'post', path: '/api/v1/api-keys', operationId: 'createKey', summary: 'Create a key (its plaintext is shown only here)',
      security: SESSION, guards: [admin],
      body: createKeyBody,
      ok: { status: 201, description: 'the key; `key` is shown only here', schema: createdKeyView },
      responses: { 402: err('plan limit (`max_keys`)') },
      handler: async (ctx, { body }) => {
        const user = ctx.state.user!;
        const { record, plaintext } = await deps.keys.create(user.tenant_id, body, `user:${user.user_id}`);
        ctx.set('cache-control', 'no-store');
        return presentCreatedKey(record, plaintext);
      },
    }),
    route({
      method: 'get', path: '/api/v1/api-keys', operationId: 'listKeys', summary: 'The tenant\'s keys, without plaintext',
      security: SESSION, guards: [admin],
      ok: { status: 200, description: 'keys of the tenant, without plaintext', schema: keyListView },
      handler: async (ctx) => {
        const tenantId = ctx.state.user!.tenant_id;
        const [keys, count] = await Promise.all([deps.keys.list(tenantId, LIST_LIMIT), deps.keys.count(tenantId)]);
        return presentKeyList(keys, count);
      },
    }),
    route({
      method: 'get', path: '/api/v1/api-keys/:key_id', operationId: 'getKey', summary: 'One key',
      security: SESSION, guards: [admin], params: keyId,
      ok: { status: 200, description: 'the key', schema: keyView },
      handler: async (ctx, { params }) => {
        const key = await deps.keys.get(ctx.state.user!.tenant_id, params.key_id);
        if (!key) throw AppError.notFound('key');
        return presentKeyView(key);
      },
    }),
    route({
      method: 'post', path: '/api/v1/api-keys/:key_id/rotate', operationId: 'rotateKey', summary: 'Replace a key; the old one works for the overlap',
      security: SESSION, guards: [admin], params: keyId,
      body: rotateKeyBody,
      ok: { status: 201, description: 'the replacement; the old key works until replaced_key_expires_at', schema: rotatedKeyView },
      responses: { 409: err('revoked, expired or already rotated') },
      handler: async (ctx, { params, body }) => {
        const user = ctx.state.user!;
        const r = await deps.keys.rotate(user.tenant_id, params.key_id, body.overlap_seconds, `user:${user.user_id}`);
        ctx.set('cache-control', 'no-store');
        return presentRotatedKey(r.record, r.plaintext, r.replaced);
      },
    }),
    route({
      method: 'delete', path: '/api/v1/api-keys/:key_id', operationId: 'revokeKey', summary: 'Revoke a key at once on every replica',
      security: SESSION, guards: [admin], params: keyId,
      ok: { status: 200, description: 'the revoked key', schema: keyView },
      handler: async (ctx, { params }) => {
        const key = await deps.keys.revoke(ctx.state.user!.tenant_id, params.key_id);
        if (!key) throw AppError.notFound('key');
        return presentKeyView(key);
      },
    }),
  ];
}
