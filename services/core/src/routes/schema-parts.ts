import { z } from 'zod';
import { VISIBLE } from '../application/chat-rules';

export { VISIBLE };

/**
 * A query parameter read from its text by `text` (its issues and their messages exactly as `text` words them) and
 * documented as `documented`, the type it is read into. The OpenAPI input schema of a preprocess is its inner schema,
 * so generated clients get spec 2's booleans and integers (defaults `true`, not `"true"`); until 2026-11-30 the
 * document described the raw text (`type: string` with an enum or a pattern). `documented` only ever sees what `text`
 * made, so it refuses nothing itself.
 */
function readAs<T>(text: z.ZodType<T>, documented: z.ZodType<T>) {
  return z.preprocess((raw, ctx) => {
    const read = text.safeParse(raw);
    if (read.success) return read.data;
    for (const issue of read.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path as PropertyKey[], input: raw });
    return z.NEVER;
  }, documented);
}

/** The 32-bit bound of integer ids (one less at the bottom, as the text check has always had it). */
const INT32 = 2_147_483_647;

/** A boolean query parameter (`true`/`false`, also `1`/`0`), with its default when absent (which the document shows). */
export const queryBool = (fallback: boolean) =>
  readAs(
    z
      .enum(['true', 'false', '1', '0'], 'must be true or false')
      .default(fallback ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1'),
    z.boolean().default(fallback),
  );

/** A nullable boolean query parameter: absent, empty or `null` is null. */
export const queryNullableBool = readAs(
  z
    .enum(['true', 'false', '1', '0', 'null', ''], 'must be true, false or null')
    .optional()
    .transform((v) => (v === undefined || v === '' || v === 'null' ? null : v === 'true' || v === '1')),
  z.boolean().nullable(),
);

/** An integer path parameter (a 32-bit id), documented as the text it is in the path. */
export const intParam = z
  .string()
  .regex(/^-?\d{1,10}$/, 'must be an integer')
  .transform(Number)
  .refine((n) => Number.isSafeInteger(n) && Math.abs(n) <= INT32, 'must be a 32-bit integer');

/** An integer query parameter (a 32-bit id), read as `intParam` is and documented as an integer. */
export const queryInt = readAs(intParam, z.number().int().min(-INT32).max(INT32));

/** An optional integer query parameter; empty or `null` is null. */
export const queryNullableInt = readAs(
  z
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
    }),
  z.number().int().min(-INT32).max(INT32).nullable(),
);

/**
 * A session's name as its owner gives it (rename, PATCH): trimmed, 1–500 characters, and something to read. A name of
 * only invisible characters is refused (422) as such a message is; until 2026-11-30 `"\u200b"` was stored, a session
 * listed with no name one could see.
 */
export const sessionName = z
  .string()
  .trim()
  .min(1)
  .max(500)
  .refine((n) => n === '' || VISIBLE.test(n), 'name has nothing to read (only spaces or invisible characters)');

/**
 * A session's name as it is created (`description`), trimmed: empty, only spaces or only invisible characters leave
 * the session to be named from its first question.
 */
export const sessionDescription = z
  .string()
  .trim()
  .max(500)
  .transform((d) => (VISIBLE.test(d) ? d : ''));

/** Spec 2: every chat route accepts `tenant_id` (string or null) and ignores it; the tenant is the credential's. */
export const tenantIdParam = { tenant_id: z.string().max(256).optional() };

/**
 * A message id in a body or a query: a safe integer. Message ids are 64-bit in the database; a 32-bit bound would
 * refuse the ids a store passes 2^31 with (they could no longer be edited, rated or made the latest).
 */
export const messageIdBody = z.number().int('must be an integer').min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);
export const messageIdParam = readAs(
  z
    .string()
    .regex(/^-?\d{1,16}$/, 'must be an integer')
    .transform(Number)
    .refine((n) => Number.isSafeInteger(n), 'must be a safe integer (at most 2^53 - 1)'),
  z.number().int(),
);

/** A 32-bit integer in a body. */
export const int32 = z.number().int('must be an integer').min(-2_147_483_648).max(2_147_483_647);

/** Tool ids (at least 1 each), each once, at most 32. */
export const toolIdList = z
  .array(int32.min(1, 'a tool id is at least 1'))
  .max(32)
  .refine((ids) => new Set(ids).size === ids.length, 'a tool id appears twice');

export const iso = (d: Date) => d.toISOString();
