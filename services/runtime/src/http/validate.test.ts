import { z } from 'zod';
import { detailValidationError, detailValidationView, issueLoc, zodIssues } from './validate';

describe('validation issues in FastAPI\'s shape', () => {
  it('names array positions as integers in loc, from the validator or from a path written by hand', () => {
    const schema = z.object({ ids: z.array(z.number().int().min(1)), rows: z.array(z.object({ name: z.string() })) });
    const parsed = schema.safeParse({ ids: [1, -1], rows: [{ name: 'a' }, { name: 2 }] });
    const issues = zodIssues(parsed.error!);
    expect(issues.map((i) => issueLoc('body', i))).toEqual([
      ['body', 'ids', 1],
      ['body', 'rows', 1, 'name'],
    ]);
    expect(issueLoc('body', { path: 'column_descriptions.0.column_id', message: 'x' })).toEqual(['body', 'column_descriptions', 0, 'column_id']);
    expect(issueLoc('query', { path: '', message: 'x' })).toEqual(['query']);
    // What the routes answer is what their documents declare.
    const body = detailValidationError(issues, 'body').body;
    expect(detailValidationView.safeParse(body).success).toBe(true);
  });
});
