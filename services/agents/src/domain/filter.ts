/**
 * Atlas-style directory filters compiled to one parameterised SQL condition over a jsonb document column
 * (docs/agents.md, "Directory and database search"). Values only ever travel as bind parameters (jsonpath
 * variables or plain parameters); field paths are validated and become quoted jsonpath member accessors, sent as a
 * bind parameter too. Nothing of the filter is pasted into the SQL text.
 *
 * Semantics: a path is looked up in lax mode, so an array on the way (or at the end) matches when any element
 * matches; numbers compare numerically, strings as text (code point order), and a number never equals or orders
 * against a string.
 */

export const FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$/;
export const MAX_FILTER_DEPTH = 8;
export const MAX_FILTER_CLAUSES = 64;
export const MAX_REGEX_LENGTH = 256;
/** The largest bound of a counted repetition (`{n,m}`) a `$regex` may hold. */
export const MAX_REGEX_REPEAT = 100;

/**
 * Why a `$regex` is refused as too costly to run, or null. A directory search runs every pattern over every record
 * it reads, and in embedded mode PostgreSQL runs on the process's own thread, where no statement timeout can stop
 * it: a pattern whose cost can explode would stop every tenant's requests. So, read conservatively (PostgreSQL's
 * syntax, escapes and bracket expressions skipped over): no back-reference (`\1`, `\k<name>`: `^(.*)\1\1$` takes
 * minutes over a few thousand records), no repetition of a group that itself repeats (`(a+)+`, `(a{1,200}){1,200}`),
 * and no counted repetition above `MAX_REGEX_REPEAT`.
 */
export function regexRefusal(pattern: string): string | null {
  /** Per open group: whether something inside it repeats. */
  const groups: boolean[] = [];
  let repeatsInside = false;
  /** The quantifier at `i`: where it ends, its largest count, and whether it repeats (`?` and `{0,1}` do not). */
  const quantifierAt = (i: number): { end: number; bound: number; repeats: boolean } | null => {
    const c = pattern[i];
    if (c === '*' || c === '+') return { end: i + 1, bound: 0, repeats: true };
    if (c === '?') return { end: i + 1, bound: 0, repeats: false };
    if (c !== '{') return null;
    const m = /^\{(\d+)(?:(,)(\d*))?\}/.exec(pattern.slice(i));
    if (!m) return null;
    const low = Number(m[1]);
    const high = m[2] === undefined ? low : m[3] ? Number(m[3]) : Infinity;
    return { end: i + m[0].length, bound: Math.max(low, high === Infinity ? low : high), repeats: high > 1 };
  };
  for (let i = 0; i < pattern.length; ) {
    const c = pattern[i]!;
    let groupRepeats: boolean | null = null;
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (/[1-9]/.test(next) || next === 'k') return 'back-references (\\1, \\k<name>) are not supported';
      i += 2;
    } else if (c === '[') {
      // A bracket expression: up to its closing `]` (a `]` first in it is a member), `[:class:]` inside.
      let j = i + 1;
      if (pattern[j] === '^') j++;
      if (pattern[j] === ']') j++;
      while (j < pattern.length && pattern[j] !== ']') j = pattern.startsWith('[:', j) ? Math.max(pattern.indexOf(':]', j + 2) + 2, j + 1) : j + 1;
      i = j + 1;
    } else if (c === '(') {
      groups.push(repeatsInside);
      repeatsInside = false;
      i += 1;
      continue;
    } else if (c === ')') {
      groupRepeats = repeatsInside;
      repeatsInside = (groups.pop() ?? false) || repeatsInside;
      i += 1;
    } else {
      i += 1;
    }
    const q = quantifierAt(i);
    if (!q) continue;
    if (q.bound > MAX_REGEX_REPEAT) return `a counted repetition may go up to ${MAX_REGEX_REPEAT}`;
    if (q.repeats && groupRepeats) return 'a repeated group may not itself hold a repetition (such as (a+)+)';
    if (q.repeats) repeatsInside = true;
    i = q.end;
    // A lazy or possessive marker after the quantifier belongs to it.
    if (pattern[i] === '?' || pattern[i] === '+') i += 1;
  }
  return null;
}

/** Values in one `$in` or `$nin`. */
export const MAX_IN_VALUES = 100;
/** Characters of one string operand. */
export const MAX_STRING_VALUE = 1000;

/** A filter the compiler refuses: `path` is where in the filter (`location.country`, `$or.1.name`), '' for the whole. */
export class FilterError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(path === '' ? reason : `${path}: ${reason}`);
    this.name = 'FilterError';
  }
}

export interface CompiledFilter {
  /** A boolean SQL condition (`TRUE` for an empty filter) with placeholders `$<first>`, `$<first + 1>`, ... */
  sql: string;
  params: unknown[];
}

type Scalar = string | number | boolean | null;

const COMPARISONS: Record<string, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };
const FIELD_OPERATORS = new Set(['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte', '$regex', '$options', '$exists']);

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const join = (base: string, part: string | number): string => (base === '' ? String(part) : `${base}.${part}`);

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** The lax jsonpath of a validated dotted field path: `location.country` → `lax $."location"."country"`. */
export function jsonPathOf(field: string): string {
  return `lax $${field
    .split('.')
    .map((part) => `."${part}"`)
    .join('')}`;
}

class Compiler {
  private clauses = 0;
  readonly params: unknown[] = [];

  constructor(
    private readonly column: string,
    private readonly first: number,
  ) {}

  private param(value: unknown): string {
    this.params.push(value);
    return `$${this.first + this.params.length - 1}`;
  }

  private count(where: string): void {
    this.clauses += 1;
    if (this.clauses > MAX_FILTER_CLAUSES) throw new FilterError(where, `the filter has more than ${MAX_FILTER_CLAUSES} clauses`);
  }

  /** A filter document: the AND of its keys. */
  document(filter: unknown, where: string, depth: number): string {
    if (depth > MAX_FILTER_DEPTH) throw new FilterError(where, `the filter nests deeper than ${MAX_FILTER_DEPTH} levels`);
    if (!isPlainObject(filter)) throw new FilterError(where, `a filter must be an object, not ${describe(filter)}`);
    const parts: string[] = [];
    for (const [key, value] of Object.entries(filter)) {
      const at = join(where, key);
      if (key === '$and' || key === '$or') {
        if (!Array.isArray(value) || value.length === 0) throw new FilterError(at, `${key} takes a non-empty array of filters, not ${describe(value)}`);
        this.count(at);
        const inner = value.map((f, i) => this.document(f, join(at, i), depth + 1));
        parts.push(`(${inner.join(key === '$and' ? ' AND ' : ' OR ')})`);
      } else if (key.startsWith('$')) {
        throw new FilterError(at, `unknown operator ${key} (a filter's top level takes field paths, $and and $or)`);
      } else {
        if (!FIELD_PATH.test(key)) throw new FilterError(at, 'is not a field path (letters, digits and _ separated by dots, starting with a letter or _)');
        parts.push(this.field(key, value, at, depth));
      }
    }
    return parts.length === 0 ? 'TRUE' : parts.length === 1 ? parts[0]! : `(${parts.join(' AND ')})`;
  }

  /** The conditions on one field: an operator object, or implicit equality. */
  private field(field: string, spec: unknown, at: string, depth: number): string {
    if (!isPlainObject(spec)) return this.equality(field, spec, at, false);
    const keys = Object.keys(spec);
    if (keys.length === 0) throw new FilterError(at, 'an operator object needs at least one operator');
    if (!keys.every((k) => k.startsWith('$'))) {
      throw new FilterError(at, 'compares to an object: name nested fields with a dotted path (`location.country`) or use operators');
    }
    if (depth + 1 > MAX_FILTER_DEPTH) throw new FilterError(at, `the filter nests deeper than ${MAX_FILTER_DEPTH} levels`);
    const parts: string[] = [];
    for (const op of keys) {
      const value = spec[op];
      const opAt = join(at, op);
      if (!FIELD_OPERATORS.has(op)) throw new FilterError(opAt, `unknown operator ${op}`);
      if (op === '$options') {
        if (!('$regex' in spec)) throw new FilterError(opAt, '$options goes with $regex');
        continue;
      }
      if (op === '$eq') parts.push(this.equality(field, value, opAt, false));
      else if (op === '$ne') parts.push(this.equality(field, value, opAt, true));
      else if (op === '$in' || op === '$nin') parts.push(this.membership(field, value, opAt, op === '$nin'));
      else if (op === '$exists') parts.push(this.exists(field, value, opAt));
      else if (op === '$regex') parts.push(this.regex(field, value, spec.$options, opAt));
      else parts.push(this.comparison(field, COMPARISONS[op]!, value, opAt));
    }
    return parts.length === 1 ? parts[0]! : `(${parts.join(' AND ')})`;
  }

  private scalar(value: unknown, at: string): Scalar {
    if (value === null || typeof value === 'boolean') return value;
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new FilterError(at, 'a number must be finite');
      return value;
    }
    if (typeof value === 'string') {
      if (value.length > MAX_STRING_VALUE) throw new FilterError(at, `a string may hold at most ${MAX_STRING_VALUE} characters`);
      return value;
    }
    throw new FilterError(at, `takes a string, number, boolean or null, not ${describe(value)}`);
  }

  private pathExists(field: string, predicate: string, vars: Record<string, Scalar>): string {
    return `jsonb_path_exists(${this.column}, ${this.param(`${jsonPathOf(field)} ? (${predicate})`)}::jsonpath, ${this.param(JSON.stringify(vars))}::jsonb)`;
  }

  private equality(field: string, value: unknown, at: string, negate: boolean): string {
    this.count(at);
    const v = this.scalar(value, at);
    const cond = this.pathExists(field, '@ == $v', { v });
    return negate ? `NOT ${cond}` : cond;
  }

  private membership(field: string, value: unknown, at: string, negate: boolean): string {
    this.count(at);
    if (!Array.isArray(value) || value.length === 0) throw new FilterError(at, `takes a non-empty array of values, not ${describe(value)}`);
    if (value.length > MAX_IN_VALUES) throw new FilterError(at, `takes at most ${MAX_IN_VALUES} values`);
    const vars: Record<string, Scalar> = {};
    value.forEach((v, i) => {
      vars[`v${i}`] = this.scalar(v, join(at, i));
    });
    const cond = this.pathExists(field, Object.keys(vars).map((k) => `@ == $${k}`).join(' || '), vars);
    return negate ? `NOT ${cond}` : cond;
  }

  private comparison(field: string, operator: string, value: unknown, at: string): string {
    this.count(at);
    if (typeof value !== 'number' && typeof value !== 'string') throw new FilterError(at, `takes a number or a string, not ${describe(value)}`);
    const v = this.scalar(value, at);
    return this.pathExists(field, `@ ${operator} $v`, { v });
  }

  private exists(field: string, value: unknown, at: string): string {
    this.count(at);
    if (typeof value !== 'boolean') throw new FilterError(at, `takes true or false, not ${describe(value)}`);
    const cond = `jsonb_path_exists(${this.column}, ${this.param(jsonPathOf(field))}::jsonpath)`;
    return value ? cond : `NOT ${cond}`;
  }

  private regex(field: string, value: unknown, options: unknown, at: string): string {
    this.count(at);
    if (typeof value !== 'string') throw new FilterError(at, `takes a string, not ${describe(value)}`);
    if (value.length > MAX_REGEX_LENGTH) throw new FilterError(at, `a regular expression may hold at most ${MAX_REGEX_LENGTH} characters`);
    const costly = regexRefusal(value);
    if (costly) throw new FilterError(at, `this regular expression could take too long to run: ${costly}`);
    if (options !== undefined && options !== '' && options !== 'i') {
      throw new FilterError(at.replace(/\$regex$/, '$options'), `takes "i" (case-insensitive) or "", not ${typeof options === 'string' ? JSON.stringify(options) : describe(options)}`);
    }
    const op = options === 'i' ? '~*' : '~';
    // Every value at the path (each element of an array), strings only, against the pattern as a bind parameter.
    const path = this.param(`${jsonPathOf(field)}[*]`);
    const pattern = this.param(value);
    return `EXISTS (SELECT 1 FROM jsonb_path_query(${this.column}, ${path}::jsonpath) AS m(v) WHERE jsonb_typeof(m.v) = 'string' AND (m.v #>> '{}') ${op} ${pattern})`;
  }
}

/**
 * Compiles `filter` into a condition over `column` (a trusted SQL expression such as `d.data`) whose placeholders
 * start at `$first`. Throws a FilterError naming the path of the first problem.
 */
export function compileFilter(filter: unknown, options: { column: string; first: number }): CompiledFilter {
  const compiler = new Compiler(options.column, options.first);
  const sql = compiler.document(filter, '', 0);
  return { sql, params: compiler.params };
}
