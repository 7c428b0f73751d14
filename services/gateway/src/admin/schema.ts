import { z } from 'zod';

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

export const rotateBody = z.object({ overlap_seconds: z.number().int().min(0).optional() }).strict();

export const createUserBody = z
  .object({ email: z.string().trim().min(3).max(320).regex(/^[^@\s]+@[^@\s]+$/), password: z.string().min(12).max(256), role: z.enum(['admin', 'member']).default('member') })
  .strict();
