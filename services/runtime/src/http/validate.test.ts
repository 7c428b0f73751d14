import { z } from 'zod';
import { detailValidationError, detailValidationView, isoInstant, issueLoc, queryInteger, zodIssues } from './validate';

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

describe('queryInteger', () => {
  const schema = z.object({ limit: queryInteger('limit', { min: 1, max: 200, default: 50 }) });
  const read = (limit: unknown) => schema.safeParse(limit === undefined ? {} : { limit });

  it('reads decimal digits and defaults when absent', () => {
    expect([read('7').data, read('200').data, read('007').data, read(undefined).data]).toEqual([{ limit: 7 }, { limit: 200 }, { limit: 7 }, { limit: 50 }]);
  });

  it('refuses what Number() would have read', () => {
    for (const text of ['1e1', '0x10', ' 5', '+3', '5.0', '', '-1', '1_0', 'Infinity']) {
      const r = read(text);
      expect([text, r.success, r.error?.issues[0]?.message]).toEqual([text, false, 'limit must be an integer ≥ 1 in decimal digits (such as 50)']);
    }
  });

  it('names the bound a value is past, and a repeated parameter', () => {
    expect(read('0').error?.issues[0]?.message).toBe('limit is at least 1');
    expect(read('201').error?.issues[0]?.message).toBe('limit is at most 200');
    expect(read('99999999999999999999').error?.issues[0]?.message).toBe('limit is at most 200');
    expect(read(['1', '2']).error?.issues[0]?.message).toBe('give limit once (it is repeated)');
  });
});

describe('isoInstant', () => {
  const messages = (text: string) => isoInstant().safeParse(text).error?.issues.map((i) => i.message);

  it('takes a time with a time zone in the years 1 to 9999', () => {
    expect([messages('2026-12-01T10:00:00Z'), messages('0001-01-01T00:00:00Z'), messages('9999-12-31T23:59:59+00:00')]).toEqual([undefined, undefined, undefined]);
  });

  it('tells text that is no time one thing, and a time out of range the other', () => {
    expect(messages('yesterday')).toEqual(['must be an ISO timestamp with a time zone']);
    // Date reads an expanded year; the format does not, and says so alone.
    expect(messages('+010000-01-01T00:00:00Z')).toEqual(['must be an ISO timestamp with a time zone']);
    expect(messages('0000-06-01T00:00:00Z')).toEqual(['must be a time between the years 1 and 9999']);
  });

  it('leaves the checks of the object around it running, whatever is wrong with the time', () => {
    const body = z.object({ at: isoInstant() }).superRefine((_b, ctx) => ctx.addIssue({ code: 'custom', path: [], message: 'the object was checked' }));
    for (const at of ['yesterday', '+010000-01-01T00:00:00Z', '0000-06-01T00:00:00Z']) {
      expect(body.safeParse({ at }).error?.issues.map((i) => i.message)).toContain('the object was checked');
    }
  });
});
