import { z } from 'zod';
import { createKeyBody } from '../routes/api-keys/schema';

const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'letters, digits, "_", "." and "-", at most 128');
const hostname = z
  .string()
  .min(1)
  .max(253)
  .regex(/^(?=.{1,253}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/, 'must be a DNS hostname');

export const idParam = id;

export const createTenantBody = z.object({ tenant_id: id.optional(), name: z.string().trim().min(1).max(200), plan: z.string().max(40).optional() }).strict();

export const billingBody = z
  .object({ plan: z.string().max(40).optional(), credit_balance: z.number().int().nullable().optional() })
  .strict();

export const putMemoryBody = z.object({ name: z.string().trim().min(1).max(200), hostname, workspace_id: id.optional() }).strict();

/**
 * The caller's idempotency token on key creation and rotation: the same token never makes a second key in a
 * tenant, and the key it made can be looked up by it.
 */
export const clientToken = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, '1 to 128 letters, digits, ".", "_", ":" or "-"');

/** The portal's key options, plus the admin API's client token. */
export const adminCreateKeyBody = createKeyBody.extend({ client_token: clientToken.optional() });

export const rotateBody = z.object({ overlap_seconds: z.number().int().min(0).optional(), client_token: clientToken.optional() }).strict();

/** `GET .../keys?client_token=...`: the lookup of a key by the token of the call that made it. */
export const keyLookupQuery = z.object({ client_token: clientToken }).strict();

export const createUserBody = z
  .object({ email: z.string().trim().min(3).max(320).regex(/^[^@\s]+@[^@\s]+$/), password: z.string().min(12).max(256), role: z.enum(['admin', 'member']).default('member') })
  .strict();
