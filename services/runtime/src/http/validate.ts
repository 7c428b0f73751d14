import type { z } from 'zod';
import { AppError } from '../errors/app-error';

export interface ValidationIssue {
  path: string;
  message: string;
}

export function zodIssues(error: z.ZodError): ValidationIssue[] {
  return error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
}

/** Parses `input` with `schema`; every issue (not only the first) is reported in one 400. */
export function validate<S extends z.ZodType>(schema: S, input: unknown, what = 'request body'): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new AppError('VALIDATION_FAILED', `${what} is invalid`, { details: zodIssues(result.error) });
}
