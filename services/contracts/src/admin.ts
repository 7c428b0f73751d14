import { z } from 'zod';
import { CreateKeyBodySchema, KeyTypeSchema, KeyViewSchema } from './keys';

/**
 * The gateway's internal admin API (`/internal/v1`, its own listener, `Authorization: Bearer <admin token>`): the
 * request and response of every operation. The gateway validates requests and presents responses with these; the
 * operator's client parses the answers with them, so a change here is a change on both sides at once.
 * Response objects are not strict: a newer gateway may add fields an older operator ignores.
 */

/** Tenant, memory, key and user ids in paths: letters, digits, `_`, `.` and `-`, at most 128. */
export const AdminIdSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'letters, digits, "_", "." and "-", at most 128');

export const HostnameSchema = z
  .string()
  .min(1)
  .max(253)
  .regex(/^(?=.{1,253}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/, 'must be a DNS hostname');

/**
 * The caller's idempotency token on key creation and rotation: the same token never makes a second key in a
 * tenant, and the key it made can be looked up by it.
 */
export const ClientTokenSchema = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, '1 to 128 letters, digits, ".", "_", ":" or "-"');

// POST /internal/v1/tenants — 201 created, 200 when the tenant_id already exists (idempotent).
export const AdminCreateTenantBodySchema = z
  .object({ tenant_id: AdminIdSchema.optional(), name: z.string().trim().min(1).max(200), plan: z.string().max(40).optional() })
  .strict();
export type AdminCreateTenantBody = z.input<typeof AdminCreateTenantBodySchema>;
export const AdminTenantSchema = z.object({ tenant_id: z.string(), name: z.string(), plan: z.string(), default_workspace_id: z.string().nullable() });
export type AdminTenant = z.infer<typeof AdminTenantSchema>;

// PUT /internal/v1/tenants/{tenant_id}/billing
export const AdminBillingBodySchema = z.object({ plan: z.string().max(40).optional(), credit_balance: z.number().int().nullable().optional() }).strict();
export type AdminBillingBody = z.input<typeof AdminBillingBodySchema>;
export const AdminBillingSchema = z.object({ tenant_id: z.string(), plan: z.string(), credit_balance: z.number().int().nullable() });
export type AdminBilling = z.infer<typeof AdminBillingSchema>;

// POST /internal/v1/tenants/{tenant_id}/users — 201
export const AdminCreateUserBodySchema = z
  .object({
    email: z.string().trim().min(3).max(320).regex(/^[^@\s]+@[^@\s]+$/),
    password: z.string().min(12).max(256),
    role: z.enum(['admin', 'member']).default('member'),
  })
  .strict();
export type AdminCreateUserBody = z.input<typeof AdminCreateUserBodySchema>;
export const AdminUserSchema = z.object({ user_id: z.string(), tenant_id: z.string(), email: z.string(), role: z.enum(['admin', 'member']) });
export type AdminUser = z.infer<typeof AdminUserSchema>;

// PUT /internal/v1/tenants/{tenant_id}/memories/{memory_id} — creates or updates (idempotent); 409 when the
// hostname belongs to another memory. DELETE takes the required query `retain_data=true|false`.
export const AdminPutMemoryBodySchema = z.object({ name: z.string().trim().min(1).max(200), hostname: HostnameSchema, workspace_id: AdminIdSchema.optional() }).strict();
export type AdminPutMemoryBody = z.input<typeof AdminPutMemoryBodySchema>;
export const AdminMemorySchema = z.object({ memory_id: z.string(), hostname: z.string(), workspace_id: z.string() });
export type AdminMemory = z.infer<typeof AdminMemorySchema>;
export const AdminDeleteMemoryQuerySchema = z.object({ retain_data: z.enum(['true', 'false'], 'retain_data is required and must be true (keep the data) or false (erase it)') });

// POST /internal/v1/tenants/{tenant_id}/keys — 201; the portal's key options plus the client token. A replayed
// client token answers 409 CONFLICT with `details.key_id` (the key it made; its plaintext is never shown again).
export const AdminCreateKeyBodySchema = CreateKeyBodySchema.extend({ client_token: ClientTokenSchema.optional() });
export type AdminCreateKeyBody = z.input<typeof AdminCreateKeyBodySchema>;
export const AdminCreatedKeySchema = z.object({
  key_id: z.string(),
  /** Plaintext, returned once. Never log it. */
  key: z.string(),
  prefix: z.string(),
  type: KeyTypeSchema,
  memory_id: z.string().nullable(),
  expires_at: z.string().nullable(),
});
export type AdminCreatedKey = z.infer<typeof AdminCreatedKeySchema>;

// POST /internal/v1/tenants/{tenant_id}/keys/{key_id}/rotate — 201; client token as for creation.
export const AdminRotateKeyBodySchema = z.object({ overlap_seconds: z.number().int().min(0).optional(), client_token: ClientTokenSchema.optional() }).strict();
export type AdminRotateKeyBody = z.input<typeof AdminRotateKeyBodySchema>;
export const AdminRotatedKeySchema = z.object({
  key_id: z.string(),
  /** Plaintext of the replacement, returned once. Never log it. */
  key: z.string(),
  prefix: z.string(),
  replaced_key_id: z.string(),
  replaced_key_expires_at: z.string().nullable(),
});
export type AdminRotatedKey = z.infer<typeof AdminRotatedKeySchema>;

// GET /internal/v1/tenants/{tenant_id}/keys?client_token=… — the key a create or rotate call made: 0 or 1 records.
export const AdminKeyLookupQuerySchema = z.object({ client_token: ClientTokenSchema }).strict();
export const AdminKeyLookupSchema = z.object({ api_keys: z.array(KeyViewSchema).max(1) });
export type AdminKeyLookup = z.infer<typeof AdminKeyLookupSchema>;

// GET /internal/v1/tenants/{tenant_id}/keys/{key_id} — the key (KeyViewSchema); DELETE revokes it (204).

/** Every refusal of the admin API: `{error:{code,message,request_id,details?}}`. */
export const AdminErrorBodySchema = z.object({
  error: z.object({ code: z.string(), message: z.string(), request_id: z.string().optional(), details: z.unknown().optional() }),
});
export type AdminErrorBody = z.infer<typeof AdminErrorBodySchema>;
