import { z } from 'zod';

/** A boolean query parameter (`true`/`false`, also `1`/`0`), with its default when absent (which the document shows). */
export const queryBool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'], 'must be true or false')
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1');

/** A nullable boolean query parameter: absent, empty or `null` is null. */
export const queryNullableBool = z
  .enum(['true', 'false', '1', '0', 'null', ''], 'must be true, false or null')
  .optional()
  .transform((v) => (v === undefined || v === '' || v === 'null' ? null : v === 'true' || v === '1'));

/** An integer query or path parameter (a 32-bit id). */
export const intParam = z
  .string()
  .regex(/^-?\d{1,10}$/, 'must be an integer')
  .transform(Number)
  .refine((n) => Number.isSafeInteger(n) && Math.abs(n) <= 2_147_483_647, 'must be a 32-bit integer');

/** An optional integer query parameter; empty or `null` is null. The pattern is the document's; the range is checked after. */
export const queryNullableInt = z
  .string()
  .regex(/^(?:|null|-?\d{1,10})$/, 'must be an integer or null')
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v === '' || v === 'null') return null;
    const parsed = intParam.safeParse(v);
    if (!parsed.success) {
      ctx.addIssue({ code: 'custom', message: 'must be an integer or null' });
      return z.NEVER;
    }
    return parsed.data;
  });

/** Spec 2: every chat route accepts `tenant_id` (string or null) and ignores it; the tenant is the credential's. */
export const tenantIdParam = { tenant_id: z.string().max(256).optional() };

/**
 * A message id in a body or a query: a safe integer. Message ids are 64-bit in the database; a 32-bit bound would
 * refuse the ids a store passes 2^31 with (they could no longer be edited, rated or made the latest).
 */
export const messageIdBody = z.number().int('must be an integer').min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);
export const messageIdParam = z
  .string()
  .regex(/^-?\d{1,16}$/, 'must be an integer')
  .transform(Number)
  .refine((n) => Number.isSafeInteger(n), 'must be a safe integer (at most 2^53 - 1)');

/** A 32-bit integer in a body. */
export const int32 = z.number().int('must be an integer').min(-2_147_483_648).max(2_147_483_647);

/** Tool ids (at least 1 each), each once, at most 32. */
export const toolIdList = z
  .array(int32.min(1, 'a tool id is at least 1'))
  .max(32)
  .refine((ids) => new Set(ids).size === ids.length, 'a tool id appears twice');

export const iso = (d: Date) => d.toISOString();
