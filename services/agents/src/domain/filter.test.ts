import { compileFilter, FilterError, jsonPathOf, regexRefusal } from './filter';

const compile = (filter: unknown) => compileFilter(filter, { column: 'd.data', first: 3 });

function refusal(filter: unknown): { path: string; reason: string } {
  try {
    compile(filter);
  } catch (err) {
    if (err instanceof FilterError) return { path: err.path, reason: err.reason };
    throw err;
  }
  throw new Error('the filter was accepted');
}

describe('compileFilter', () => {
  it('compiles an empty filter to TRUE with no parameters', () => {
    expect(compile({})).toEqual({ sql: 'TRUE', params: [] });
  });

  it('turns implicit equality on a dotted path into a lax jsonpath test with the value as a variable', () => {
    const c = compile({ 'location.country': 'DE' });
    expect(c.sql).toBe('jsonb_path_exists(d.data, $3::jsonpath, $4::jsonb)');
    expect(c.params).toEqual(['lax $."location"."country" ? (@ == $v)', JSON.stringify({ v: 'DE' })]);
  });

  it('never puts a value into the SQL text, however it is spelled', () => {
    const evil = `x'); DROP TABLE agents.directory; --`;
    const c = compile({ name: evil, $or: [{ title: { $regex: evil } }, { tags: { $in: [evil, 1] } }] });
    expect(c.sql).not.toContain('DROP');
    expect(c.params.some((p) => typeof p === 'string' && p.includes('DROP'))).toBe(true);
    // Placeholders are numbered from `first`, one per parameter.
    const numbers = [...c.sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]));
    expect(new Set(numbers)).toEqual(new Set(c.params.map((_, i) => i + 3)));
  });

  it('compiles every operator', () => {
    const c = compile({
      a: { $eq: 1 }, b: { $ne: 'x' }, c: { $in: ['p', 2] }, d: { $nin: [true] },
      e: { $gt: 1, $gte: 2, $lt: 'm', $lte: 9 }, f: { $regex: '^ac', $options: 'i' }, g: { $exists: false },
    });
    expect(c.sql).toContain('NOT jsonb_path_exists');
    expect(c.sql).toContain('~*');
    expect(c.params).toContain('lax $."c" ? (@ == $v0 || @ == $v1)');
    expect(c.params).toContain(JSON.stringify({ v0: 'p', v1: 2 }));
    expect(c.params).toContain('lax $."e" ? (@ >= $v)');
    expect(c.params).toContain('lax $."f"[*]');
    expect(c.params).toContain('^ac');
    expect(c.params).toContain('lax $."g"');
  });

  it('joins $and and $or', () => {
    const c = compile({ $or: [{ a: 1 }, { $and: [{ b: 2 }, { c: 3 }] }] });
    expect(c.sql).toMatch(/^\(jsonb_path_exists\(.*\) OR \(jsonb_path_exists\(.*\) AND jsonb_path_exists\(.*\)\)\)$/);
  });

  it('quotes every path part as a member accessor', () => {
    expect(jsonPathOf('a.b_1.0')).toBe('lax $."a"."b_1"."0"');
  });

  it.each([
    [{ $where: 'x' }, '$where', /unknown operator \$where/],
    [{ name: { $foo: 1 } }, 'name.$foo', /unknown operator \$foo/],
    [{ 'bad path': 1 }, 'bad path', /not a field path/],
    [{ 'a..b': 1 }, 'a..b', /not a field path/],
    [{ '1a': 1 }, '1a', /not a field path/],
    [{ name: { nested: 1 } }, 'name', /dotted path/],
    [{ name: [1, 2] }, 'name', /not an array/],
    [{ name: {} }, 'name', /at least one operator/],
    [{ n: { $gt: true } }, 'n.$gt', /number or a string/],
    [{ n: { $in: 'x' } }, 'n.$in', /non-empty array/],
    [{ n: { $in: [] } }, 'n.$in', /non-empty array/],
    [{ n: { $in: [{}] } }, 'n.$in.0', /not an object/],
    [{ n: { $exists: 1 } }, 'n.$exists', /true or false/],
    [{ n: { $regex: 5 } }, 'n.$regex', /string/],
    [{ n: { $regex: 'a', $options: 'g' } }, 'n.$options', /"i"/],
    [{ n: { $options: 'i' } }, 'n.$options', /goes with \$regex/],
    [{ n: { $regex: 'a'.repeat(257) } }, 'n.$regex', /256/],
    [{ n: { $regex: '^(.*)\\1\\1\\1$' } }, 'n.$regex', /back-references/],
    [{ n: { $regex: '(?<w>a)\\k<w>' } }, 'n.$regex', /back-references/],
    [{ n: { $regex: '(a+)+$' } }, 'n.$regex', /repeated group/],
    [{ n: { $regex: '((ab)*c)*' } }, 'n.$regex', /repeated group/],
    [{ n: { $regex: '(a{1,200}){1,200}y' } }, 'n.$regex', /up to 100/],
    [{ n: { $regex: '(a{1,20}){1,20}y' } }, 'n.$regex', /repeated group/],
    [{ n: { $regex: 'x{101}' } }, 'n.$regex', /up to 100/],
    [{ $or: [] }, '$or', /non-empty array/],
    [{ $and: [1] }, '$and.0', /must be an object/],
    [[], '', /must be an object/],
  ])('refuses %j at %s', (filter, path, reason) => {
    const r = refusal(filter);
    expect(r.path).toBe(path);
    expect(r.reason).toMatch(reason);
  });

  it('accepts a regular expression of exactly 256 characters', () => {
    expect(() => compile({ n: { $regex: 'a'.repeat(256) } })).not.toThrow();
  });

  it('accepts the patterns a search needs: anchors, classes, alternation, one level of repetition, escapes', () => {
    for (const pattern of ['^soft', 'ware$', '(saas|b2b)', '^[A-Z][a-z]+ (Inc|Ltd)\\.?$', '\\d{3}-\\d{4}', '[[:alpha:]]+ing', '(ab)+c', '[(+*]{2}', '\\(a+\\)+', 'a{1,100}', '(foo|bar)?baz*?', '[)]+', '(a|b+)?c', '(x+)?y', '(ab?)+', '(a{2,5})?', 'a{3,}b']) {
      expect({ pattern, refusal: regexRefusal(pattern) }).toEqual({ pattern, refusal: null });
      expect(() => compile({ n: { $regex: pattern } })).not.toThrow();
    }
  });

  it('refuses nesting deeper than 8 levels, and allows 8', () => {
    const nest = (levels: number): Record<string, unknown> => (levels === 0 ? { a: 1 } : { $and: [nest(levels - 1)] });
    expect(() => compile(nest(8))).not.toThrow();
    expect(refusal(nest(9)).reason).toMatch(/deeper than 8/);
  });

  it('refuses more than 64 clauses, and allows 64', () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, i]));
    expect(() => compile(many(64))).not.toThrow();
    const r = refusal(many(65));
    expect(r).toEqual({ path: 'f64', reason: 'the filter has more than 64 clauses' });
  });
});
