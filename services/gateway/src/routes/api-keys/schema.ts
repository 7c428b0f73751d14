import { z } from 'zod';
import { CreateKeyBodySchema, KeyScopesSchema, KeyViewSchema, RateLimitSchema } from '@lore/contracts';
import { presentKey } from '../../application/keys';
import type { ApiKeyRecord } from '../../store/api-keys';

// The key shapes are shared with the internal admin API and the operator, so they live in @lore/contracts.
export const keyScopeSchema = KeyScopesSchema;
export const rateLimitSchema = RateLimitSchema;
export const createKeyBody = CreateKeyBodySchema;
export const keyView = KeyViewSchema;

export const rotateKeyBody = z.object({ overlap_seconds: z.number().int().min(0).optional() }).strict();

/** Creation and rotation add the plaintext, shown only in that response. */
export const createdKeyView = keyView.extend({ key: z.string() });
export const rotatedKeyView = createdKeyView.extend({ replaced_key_id: z.string(), replaced_key_expires_at: z.string().nullable() });
export const keyListView = z.object({ api_keys: z.array(keyView), count: z.number().int() });

export function presentKeyView(k: ApiKeyRecord): z.input<typeof keyView> {
  return presentKey(k);
}

export function presentCreatedKey(k: ApiKeyRecord, plaintext: string): z.input<typeof createdKeyView> {
  return { ...presentKey(k), key: plaintext };
}

export function presentRotatedKey(k: ApiKeyRecord, plaintext: string, replaced: ApiKeyRecord): z.input<typeof rotatedKeyView> {
  return { ...presentKey(k), key: plaintext, replaced_key_id: replaced.key_id, replaced_key_expires_at: replaced.expires_at };
}

/** `count` is every key of the tenant: more than the listed ones when the list was cut at its limit. */
export function presentKeyList(keys: ApiKeyRecord[], count = keys.length): z.input<typeof keyListView> {
  return { api_keys: keys.map((k) => presentKey(k)), count: Math.max(count, keys.length) };
}
