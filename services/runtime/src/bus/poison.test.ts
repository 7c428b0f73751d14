import { BrokerNames, startsAtBeginning } from './naming';
import { TransientError, isTransientError, poisonPolicy } from './poison';

describe('isTransientError', () => {
  it('recognises errors marked transient, dependency outages and their causes', () => {
    expect(isTransientError(new TransientError('waiting for the database'))).toBe(true);
    expect(isTransientError(Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isTransientError(Object.assign(new Error('the database system is shutting down'), { code: '57P01' }))).toBe(true);
    expect(isTransientError(Object.assign(new Error('too many connections'), { code: '53300' }))).toBe(true);
    expect(isTransientError(Object.assign(new Error('could not serialize access'), { code: '40001' }))).toBe(true);
    expect(isTransientError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isTransientError(Object.assign(new Error('broker gone'), { name: 'KafkaJSConnectionError' }))).toBe(true);
    expect(isTransientError(new AggregateError([Object.assign(new Error('x'), { code: 'ECONNRESET' })], 'all failed'))).toBe(true);
    expect(isTransientError(new Error('indexing failed', { cause: Object.assign(new Error('x'), { code: 'ETIMEDOUT' }) }))).toBe(true);
  });

  it('leaves everything else bounded: bugs, bad input, constraint violations', () => {
    expect(isTransientError(new Error('Unexpected token < in JSON'))).toBe(false);
    expect(isTransientError(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBe(false);
    expect(isTransientError(Object.assign(new Error('duplicate key value'), { code: '23505' }))).toBe(false);
    expect(isTransientError(Object.assign(new Error('syntax error'), { code: '42601' }))).toBe(false);
    expect(isTransientError('a string')).toBe(false);
    expect(isTransientError(undefined)).toBe(false);
  });
});

describe('poisonPolicy', () => {
  const defaults = { maxAttempts: 10, retry: { initialMs: 200, maxMs: 10_000 } };

  it("takes the subscription's bound and backoff over the bus's, and adds its own transient rule", () => {
    const policy = poisonPolicy({ groupId: 'g', topics: ['t'], maxAttempts: 3, retry: { initialMs: 5, maxMs: 50 }, isTransient: (e) => e instanceof RangeError }, defaults);
    expect(policy.maxAttempts).toBe(3);
    expect(policy.retry).toEqual({ initialMs: 5, maxMs: 50 });
    expect(policy.isTransient(new RangeError('busy'))).toBe(true);
    expect(policy.isTransient(new TransientError('x'))).toBe(true);
    expect(policy.isTransient(new Error('bug'))).toBe(false);
    expect(poisonPolicy({ groupId: 'g', topics: ['t'] }, defaults).maxAttempts).toBe(10);
  });

  it('refuses a bound below one', () => {
    expect(() => poisonPolicy({ groupId: 'g', topics: ['t'], maxAttempts: 0 }, defaults)).toThrow('maxAttempts');
  });
});

describe('BrokerNames', () => {
  it('prefixes topics and groups, and reads logical names back', () => {
    const names = new BrokerNames('acme');
    expect(names.topic('lore.events')).toBe('acme.lore.events');
    expect(names.group('graph-worker')).toBe('acme.graph-worker');
    expect(names.logicalTopic('acme.lore.events')).toBe('lore.events');
    const none = new BrokerNames('');
    expect(none.topic('lore.events')).toBe('lore.events');
    expect(() => new BrokerNames('bad prefix')).toThrow('invalid');
    expect(() => new BrokerNames('ends.')).toThrow('invalid');
  });

  it("starts a new group by the topic's policy unless the caller chose", () => {
    expect(startsAtBeginning('lore.memory.ingest', undefined)).toBe(true);
    expect(startsAtBeginning('lore.dead', undefined)).toBe(false);
    expect(startsAtBeginning('not.a.lore.topic', undefined)).toBe(false);
    expect(startsAtBeginning('lore.dead', true)).toBe(true);
    expect(startsAtBeginning('lore.memory.ingest', false)).toBe(false);
  });
});
