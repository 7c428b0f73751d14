import { z } from 'zod';
import { CreateKeyBodySchema, KeyScopesSchema, KeyViewSchema, RateLimitSchema } from '@lore/contracts';

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
