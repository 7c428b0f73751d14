import { z } from 'zod';

/**
 * API key shapes shared by the gateway's portal routes (`/api/v1/api-keys`), its internal admin API and the
 * operator that calls that API. One declaration each: the gateway validates and presents with them, the operator
 * parses the platform's answers with them.
 */

/** The modules a key scope or an OAuth scope can name: one per public surface of the platform. */
export const MODULES = ['workspaces', 'projects', 'pages', 'memory', 'webhooks', 'chat', 'connectors', 'graph', 'agents', 'mcp'] as const;
export type Module = (typeof MODULES)[number];

export const KEY_TYPES = ['live', 'test', 'ephemeral', 'memory'] as const;
export const KeyTypeSchema = z.enum(KEY_TYPES);
export type KeyType = z.infer<typeof KeyTypeSchema>;

export const KeyAccessSchema = z.enum(['read', 'write', 'read_write']);
export type KeyAccess = z.infer<typeof KeyAccessSchema>;

/** A key's scope; an empty scope allows everything. */
export const KeyScopesSchema = z
  .object({
    modules: z.array(z.enum(MODULES)).max(MODULES.length).optional(),
    memories: z.array(z.string().min(1).max(128)).max(1000).optional(),
    access: KeyAccessSchema.optional(),
  })
  .strict();
export type KeyScopes = z.infer<typeof KeyScopesSchema>;

export const RateLimitSchema = z.object({ per_second: z.number().positive().max(1_000_000), burst: z.number().int().min(1).max(10_000_000) }).strict();
export type RateLimit = z.infer<typeof RateLimitSchema>;

export const AppPermissionsSchema = z.record(z.string(), z.union([z.boolean(), z.array(z.string().max(64)).max(64)]));

/** The options of a new key (portal route and admin API alike). `type` and `name` are required. */
export const CreateKeyBodySchema = z
  .object({
    type: KeyTypeSchema,
    name: z.string().trim().min(1).max(200),
    memory_id: z.string().min(1).max(128).nullish(),
    workspace_id: z.string().min(1).max(128).nullish(),
    project_id: z.string().min(1).max(128).nullish(),
    scopes: KeyScopesSchema.optional(),
    ip_allowlist: z.array(z.string().max(64)).max(100).optional(),
    app_permissions: AppPermissionsSchema.optional(),
    expires_at: z.iso.datetime({ offset: true }).nullish(),
    rate_limit: RateLimitSchema.nullish(),
  })
  .strict();
export type CreateKeyBody = z.input<typeof CreateKeyBodySchema>;

/** A key as shown to its owner: never the plaintext, never the hash. */
export const KeyViewSchema = z.object({
  key_id: z.string(),
  name: z.string(),
  type: KeyTypeSchema,
  prefix: z.string(),
  status: z.enum(['active', 'expired', 'revoked']),
  memory_id: z.string().nullable(),
  workspace_id: z.string().nullable(),
  project_id: z.string().nullable(),
  scopes: KeyScopesSchema,
  ip_allowlist: z.array(z.string()),
  app_permissions: z.record(z.string(), z.union([z.boolean(), z.array(z.string())])),
  rate_limit: RateLimitSchema.nullable(),
  expires_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
  replaced_by: z.string().nullable(),
  rotated_from: z.string().nullable(),
  created_by: z.string(),
  created_at: z.string(),
});
export type KeyView = z.infer<typeof KeyViewSchema>;
