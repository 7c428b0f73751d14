import { isDatabaseUnavailable } from './unavailable';

describe('isDatabaseUnavailable', () => {
  it('knows a refused or cut connection, a server shutting down or starting, and a pool that cannot connect', () => {
    const errs: unknown[] = [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      Object.assign(new Error('connection failure'), { code: '08006' }),
      new Error('saving the document failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }),
    ];
    expect(errs.map(isDatabaseUnavailable)).toEqual(errs.map(() => true));
  });

  it('leaves statement failures and other errors alone', () => {
    const errs: unknown[] = [
      Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }),
      Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }),
      Object.assign(new Error('relation "x" does not exist'), { code: '42P01' }),
      new Error('Connection refused by the upstream model'),
      'ECONNREFUSED',
      null,
      undefined,
    ];
    expect(errs.map(isDatabaseUnavailable)).toEqual(errs.map(() => false));
  });
});
