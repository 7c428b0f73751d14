import { listDeadLettersQuery, replayBody } from './schema';

describe('a replay or dead-letter time range', () => {
  const issues = (schema: typeof replayBody | typeof listDeadLettersQuery, range: { from?: string; to?: string }) =>
    schema.safeParse(range).error?.issues.map((i) => [i.path.join('.'), i.message]);
  const good = '2026-06-01T00:00:00Z';

  it('tells a bad bound what is wrong with it, not that from must be before to', () => {
    for (const schema of [replayBody, listDeadLettersQuery]) {
      expect(issues(schema, { from: '0000-01-01T00:00:00Z', to: good })).toEqual([['from', 'must be a time between the years 1 and 9999']]);
      expect(issues(schema, { from: good, to: '0000-01-01T00:00:00Z' })).toEqual([['to', 'must be a time between the years 1 and 9999']]);
      expect(issues(schema, { from: 'last week', to: good })).toEqual([['from', 'must be an ISO timestamp with a time zone']]);
      expect(issues(schema, { from: good, to: '+010000-01-01T00:00:00Z' })).toEqual([['to', 'must be an ISO timestamp with a time zone']]);
    }
  });

  it('still refuses two good bounds out of order', () => {
    expect(issues(replayBody, { from: good, to: '2026-01-01T00:00:00Z' })).toEqual([['from', 'from must be before to']]);
    expect(issues(listDeadLettersQuery, { from: good, to: good })).toEqual([['', 'from must be before to']]);
    expect(issues(replayBody, { from: '2026-01-01T00:00:00Z', to: good })).toBeUndefined();
  });
});
