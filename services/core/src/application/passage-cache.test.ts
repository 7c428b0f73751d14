import { indexFile } from '../domain/project-files';
import { PassageCache } from './passage-cache';

const file = (id: string, chars: number, at = 1) => indexFile({ file_id: id, name: `${id}.txt`, text: 'word '.repeat(chars / 5).trim(), time_updated: new Date(at) }, 1_500);

describe('PassageCache', () => {
  it('keys a file by tenant, id and version: a changed file is indexed again, another tenant never shares it', () => {
    const a = file('f1', 1_000, 1);
    expect(PassageCache.key('t1', a)).not.toBe(PassageCache.key('t2', a));
    expect(PassageCache.key('t1', a)).not.toBe(PassageCache.key('t1', file('f1', 1_000, 2)));
    const cache = new PassageCache(10_000);
    cache.set(PassageCache.key('t1', a), a);
    expect(cache.get(PassageCache.key('t1', a))).toBe(a);
    expect(cache.get(PassageCache.key('t2', a))).toBeUndefined();
  });

  it('holds at most its bound of characters, the least recently used out first, and never a file larger than the bound', () => {
    const cache = new PassageCache(3_000);
    const [a, b, c] = [file('a', 1_000), file('b', 1_000), file('c', 1_000)];
    for (const f of [a, b, c]) cache.set(f.file_id, f);
    expect(cache.size).toBeLessThanOrEqual(3_000);
    // a used again: b is now the least recent, and goes when d comes.
    expect(cache.get('a')).toBe(a);
    const d = file('d', 1_000);
    cache.set('d', d);
    expect(cache.get('b')).toBeUndefined();
    expect([cache.get('a'), cache.get('c'), cache.get('d')]).toEqual([a, c, d]);
    cache.set('huge', file('huge', 5_000));
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.size).toBeLessThanOrEqual(3_000);
  });
});
