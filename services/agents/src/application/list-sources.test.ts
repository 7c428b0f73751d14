import { PageReadError } from '../sources/web-pages';
import { readOnceMore } from './list-sources';

/** A read that answers (or throws) the given outcomes in turn, counting its calls. */
function reads(...outcomes: Array<string | Error>) {
  let calls = 0;
  const read = async () => {
    const next = outcomes[Math.min(calls++, outcomes.length - 1)]!;
    if (next instanceof Error) throw next;
    return next;
  };
  return { read, calls: () => calls };
}

const thrown = (p: Promise<unknown>) => p.then(() => null, (err: unknown) => err);

describe('readOnceMore', () => {
  const transient = new PageReadError('unreachable', 'a.example could not be read: no answer within 10000 ms', true);

  it('asks the budget before each try, and reads nothing it refuses', async () => {
    const r = reads('page');
    expect(await thrown(readOnceMore(r.read, new AbortController().signal, () => false))).toEqual(new Error('the fetch budget is spent'));
    expect(r.calls()).toBe(0);
    let asked = 0;
    expect(await readOnceMore(r.read, new AbortController().signal, () => (asked++, true))).toBe('page');
    expect([r.calls(), asked]).toEqual([1, 1]);
  });

  it('tries a failure that may pass once more, after a pause, when the budget allows', async () => {
    const r = reads(transient, 'page');
    let asked = 0;
    const started = Date.now();
    expect(await readOnceMore(r.read, new AbortController().signal, () => (asked++, true))).toBe('page');
    expect([r.calls(), asked]).toEqual([2, 2]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    // A second failure is the answer.
    const twice = reads(transient, transient);
    expect(await thrown(readOnceMore(twice.read, new AbortController().signal, () => true))).toBe(transient);
    expect(twice.calls()).toBe(2);
  });

  it('does not try again what will not pass, what the budget refuses, or a read its caller ended', async () => {
    const gone = new PageReadError('http_error', 'https://a.example/ answered 404');
    const r = reads(gone, 'page');
    expect(await thrown(readOnceMore(r.read, new AbortController().signal, () => true))).toBe(gone);
    expect(r.calls()).toBe(1);
    const other = new Error('a bug');
    const o = reads(other, 'page');
    expect(await thrown(readOnceMore(o.read, new AbortController().signal, () => true))).toBe(other);
    expect(o.calls()).toBe(1);
    // The budget allows the first try and refuses the second: the first failure is the answer.
    const spent = reads(transient, 'page');
    let tries = 0;
    expect(await thrown(readOnceMore(spent.read, new AbortController().signal, () => tries++ === 0))).toBe(transient);
    expect([spent.calls(), tries]).toEqual([1, 2]);
    const ended = new AbortController();
    ended.abort();
    const e = reads(transient, 'page');
    expect(await thrown(readOnceMore(e.read, ended.signal, () => true))).toBe(transient);
    expect(e.calls()).toBe(1);
    // An end during the pause: no second read.
    const during = new AbortController();
    const d = reads(transient, 'page');
    setTimeout(() => during.abort(), 50);
    const started = Date.now();
    expect(await thrown(readOnceMore(d.read, during.signal, () => true))).toBe(transient);
    expect([d.calls(), Date.now() - started < 900]).toEqual([1, true]);
  });
});
