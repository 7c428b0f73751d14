import { z } from 'zod';
import { MODULES } from '../../domain/scope';

export const keyScopeSchema = z
  .object({
    modules: z.array(z.enum(MODULES)).max(MODULES.length).optional(),
    memories: z.array(z.string().min(1).max(128)).max(1000).optional(),
    access: z.enum(['read', 'write', 'read_write']).optional(),
  })
  .strict();

export const rateLimitSchema = z.object({ per_second: z.number().positive().max(1_000_000), burst: z.number().int().min(1).max(10_000_000) }).strict();

/** Shared by the portal route and the internal admin API. */
export const createKeyBody = z
  .object({
    type: z.enum(['live', 'test', 'ephemeral', 'memory']),
    name: z.string().trim().min(1).max(200),
    memory_id: z.string().min(1).max(128).nullish(),
    workspace_id: z.string().min(1).max(128).nullish(),
    project_id: z.string().min(1).max(128).nullish(),
    scopes: keyScopeSchema.optional(),
    ip_allowlist: z.array(z.string().max(64)).max(100).optional(),
    app_permissions: z.record(z.string(), z.union([z.boolean(), z.array(z.string().max(64)).max(64)])).optional(),
    expires_at: z.iso.datetime({ offset: true }).nullish(),
    rate_limit: rateLimitSchema.nullish(),
  })
  .strict();

export const rotateKeyBody = z.object({ overlap_seconds: z.number().int().min(0).optional() }).strict();

export const keyView = z.object({
  key_id: z.string(),
  name: z.string(),
  type: z.enum(['live', 'test', 'ephemeral', 'memory']),
  prefix: z.string(),
  status: z.enum(['active', 'expired', 'revoked']),
  memory_id: z.string().nullable(),
  workspace_id: z.string().nullable(),
  project_id: z.string().nullable(),
  scopes: keyScopeSchema,
  ip_allowlist: z.array(z.string()),
  app_permissions: z.record(z.string(), z.union([z.boolean(), z.array(z.string())])),
  rate_limit: rateLimitSchema.nullable(),
  expires_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
  replaced_by: z.string().nullable(),
  rotated_from: z.string().nullable(),
  created_by: z.string(),
  created_at: z.string(),
});

/** Creation and rotation add the plaintext, shown only in that response. */
export const createdKeyView = keyView.extend({ key: z.string() });
export const rotatedKeyView = createdKeyView.extend({ replaced_key_id: z.string(), replaced_key_expires_at: z.string().nullable() });
export const keyListView = z.object({ api_keys: z.array(keyView), count: z.number().int() });
