import { z } from 'zod';

/** Raised when the environment does not satisfy a process's config schema; lists every problem at once. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses the environment once against a zod schema. Every problem is collected before failing, so an operator
 * fixes a deployment in one pass instead of one variable per restart.
 */
export function parseConfig<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const path = issue.path.join('.') || '(root)';
    return `${path}: ${issue.message}`;
  });
  throw new ConfigError(problems);
}

/** A boolean that only accepts explicit words; `"false"` must never become `true`. */
export const envBool = (defaultValue: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .optional()
    .transform((v) => (v === undefined ? defaultValue : v === 'true' || v === '1' || v === 'yes'));

/**
 * An integer setting in decimal digits (an optional `-`, surrounding spaces ignored); unset or empty: the default.
 * `Number()` alone would also read `0x10`, `1e3` or `5.0`, which no documented value looks like.
 */
export const envInt = (defaultValue: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return defaultValue;
      const n = /^\s*-?\d+\s*$/.test(v) ? Number(v) : Number.NaN;
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `must be an integer between ${min} and ${max}, got "${v}"` });
        return z.NEVER;
      }
      return n;
    });

/** A secret: required, never defaulted, at least `minLength` characters. */
export const envSecret = (minLength = 16) => z.string({ error: 'is required (secrets have no default)' }).min(minLength, `must be at least ${minLength} characters`);

/** Runs `main`, printing configuration problems readably and exiting non-zero on any startup failure. */
export function exitOnConfigError(err: unknown): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
}
