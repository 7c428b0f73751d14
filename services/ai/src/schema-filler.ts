import type { JsonSchema } from './ports';
import { contentTerms, splitSentences, words } from './text';

/**
 * Rule-based, deterministic filling of a JSON Schema from a text: what the embedded language model answers to a
 * structured-output request, and how it fills a tool's arguments. No model, no randomness: the same schema and text
 * give the same value. The rules, in order, for each property (its name read as words: `due_date`, `dueDate`):
 *
 * - a labelled value in the text (`Due date: 2026-12-01`, `priority = high`) wins for any scalar type;
 * - strings by format or name: e-mail addresses, URLs, dates, phone numbers; `query`/`question`/`text`-like names
 *   take the whole `focus` text (the last user message); `title`/`name`/`summary`-like names the first sentence;
 *   anything else the first sentence, cut to `maxLength`;
 * - numbers: the first number in the text, clamped to `minimum`/`maximum`, rounded for integers;
 * - enums: the value mentioned first in the text, else the first listed;
 * - booleans: true when the name's words occur in the text without a negation just before, else false;
 * - arrays: every match for e-mails, URLs, numbers and enum values; the most frequent content words for
 *   `keywords`/`tags`/`topics`; sentences for other strings; one filled object for object items; within
 *   `minItems`/`maxItems` (default at most 5);
 * - `anyOf`/`oneOf`: the first branch that yields a value (null when nothing was found and null is allowed);
 *   local `$ref`s (`#/$defs/…`, `#/definitions/…`) are followed.
 */
export function fillSchema(schema: JsonSchema, text: string, focus: string = text): unknown {
  return new Filler(schema, text, focus).fill(schema, '', 0);
}

/** Property names that ask for the user's request itself. */
export const QUERY_NAMES = /^(?:q|query|queries|question|search|search_query|searchterm|search_term|text|input|prompt|message|content|request|instruction|instructions|term|terms|keywords_query)$/;
const HEADLINE_NAMES = /(?:^|_)(?:title|name|subject|headline|summary|answer|description|topic|reason|explanation)$/;
const EMAIL = /[\p{L}\p{N}._%+-]+@[\p{L}\p{N}.-]+\.\p{L}{2,}/gu;
const URL_RE = /\bhttps?:\/\/[^\s<>"')\]]+/g;
const DATE_RE = /\b\d{4}-\d{2}-\d{2}\b/g;
const DATETIME_RE = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})\b/g;
const PHONE_RE = /\+?\d[\d ()-]{6,}\d/g;
const NUMBER_RE = /-?\d+(?:[.,]\d+)?/g;
/** A `Label: value` run (a label of at most 41 characters, after a line, clause or sentence break). */
const LABELLED = /(?:^|(?<=[\n;,.]\s*))[\p{L}][\p{L}\p{N} _-]{0,40}\s*[:=]\s*[^\n;]+?(?=[.,]?\s*(?:[\n;]|$)|\.\s)/gu;
const NEGATIONS = new Set(['not', 'no', 'never', 'without', "isn't", "don't", "doesn't", 'non']);

/** `dueDate`, `due_date`, `due-date` → `due date`. */
export function nameWords(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_\-.]+/g, ' ')
    .trim()
    .toLowerCase();
}

export function snake(name: string): string {
  return nameWords(name).replace(/\s+/g, '_');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function matches(re: RegExp, text: string): string[] {
  return [...text.matchAll(new RegExp(re.source, re.flags.includes('g') ? re.flags : `${re.flags}g`))].map((m) => m[0]);
}

class Filler {
  constructor(
    private readonly root: JsonSchema,
    private readonly text: string,
    private readonly focus: string,
  ) {}

  fill(schema: JsonSchema, name: string, depth: number): unknown {
    const s = this.resolve(schema);
    if (depth > 8) return this.empty(s, depth);
    if ('const' in s) return s.const;
    const branches = (s.anyOf ?? s.oneOf) as JsonSchema[] | undefined;
    if (Array.isArray(branches)) {
      const nullable = branches.some((b) => this.resolve(b).type === 'null');
      for (const b of branches) {
        const r = this.resolve(b);
        if (r.type === 'null') continue;
        const v = this.fillFound(r, name, depth);
        if (v !== undefined) return v;
      }
      if (nullable) return null;
      const first = branches.find((b) => this.resolve(b).type !== 'null');
      return first ? this.empty(this.resolve(first), depth) : null;
    }
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string | undefined];
    const nullable = types.includes('null');
    const type = types.find((t) => t !== 'null') ?? (Array.isArray(s.enum) ? 'enum' : s.properties ? 'object' : undefined);
    const found = this.fillFound({ ...s, type }, name, depth);
    if (found !== undefined) return found;
    if (nullable) return null;
    return this.empty({ ...s, type }, depth);
  }

  /** The value the text gives for this schema, or undefined when it gives none. */
  private fillFound(s: JsonSchema, name: string, depth: number): unknown {
    if (Array.isArray(s.enum)) return this.enumValue(s.enum as unknown[], name);
    switch (s.type) {
      case 'object':
        return this.object(s, depth);
      case 'array':
        return this.array(s, name, depth);
      case 'string':
        return this.string(s, name);
      case 'number':
      case 'integer':
        return this.number(s, name);
      case 'boolean':
        return this.boolean(name);
      case 'null':
        return null;
      default:
        return undefined;
    }
  }

  private resolve(schema: JsonSchema): JsonSchema {
    let s = schema;
    for (let hops = 0; hops < 16 && typeof s.$ref === 'string'; hops += 1) {
      const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref as string);
      const defs = m ? (this.root[m[1] as string] as Record<string, JsonSchema> | undefined) : undefined;
      const target = m && defs ? defs[decodeURIComponent(m[2] as string)] : undefined;
      if (!target) return {};
      s = target;
    }
    return s;
  }

  /** `Name: value` or `name = value` on a line of the text, for the property's name read as words. */
  private labelled(name: string): string | undefined {
    if (!name) return undefined;
    const words = nameWords(name);
    const pattern = new RegExp(`(?:^|[\\n;,.])\\s*(?:${escapeRegExp(words)}|${escapeRegExp(snake(name))})\\s*[:=]\\s*(.+?)(?=[.,]?\\s*(?:[\\n;]|$)|\\.\\s)`, 'i');
    const m = pattern.exec(this.text);
    return m?.[1]?.trim() || undefined;
  }

  private object(s: JsonSchema, depth: number): Record<string, unknown> {
    const props = (s.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    const out: Record<string, unknown> = {};
    for (const [key, prop] of Object.entries(props)) {
      const v = this.fill(prop, key, depth + 1);
      if (required.has(key) || (v !== null && v !== undefined && v !== '' && !(Array.isArray(v) && v.length === 0))) out[key] = v;
    }
    return out;
  }

  private enumValue(values: unknown[], name: string): unknown {
    const label = this.labelled(name)?.toLowerCase();
    if (label !== undefined) {
      const hit = values.find((v) => String(v).toLowerCase() === label);
      if (hit !== undefined) return hit;
    }
    const lower = this.text.toLowerCase();
    let best: { v: unknown; at: number } | undefined;
    for (const v of values) {
      if (v === null) continue;
      const m = new RegExp(`(?:^|[^\\p{L}\\p{N}])${escapeRegExp(String(v).toLowerCase())}(?![\\p{L}\\p{N}])`, 'u').exec(lower);
      if (m && (best === undefined || m.index < best.at)) best = { v, at: m.index };
    }
    return best ? best.v : values[0];
  }

  private string(s: JsonSchema, name: string): string | undefined {
    const key = snake(name);
    const format = typeof s.format === 'string' ? s.format : '';
    const fit = (v: string | undefined) => (v === undefined ? undefined : this.bound(s, v));
    if (format === 'email' || /(?:^|_)e?_?mail(?:_address)?$/.test(key)) return fit(matches(EMAIL, this.text)[0]);
    if (format === 'uri' || format === 'url' || /(?:^|_)(?:url|uri|link|website|homepage|href)$/.test(key)) return fit(matches(URL_RE, this.text)[0]);
    if (format === 'date-time') return fit(matches(DATETIME_RE, this.text)[0]);
    if (format === 'date' || /(?:^|_)date$/.test(key)) return fit(this.labelled(name) ?? matches(DATE_RE, this.text)[0]);
    if (/(?:^|_)(?:phone|telephone|mobile)(?:_number)?$/.test(key)) return fit(matches(PHONE_RE, this.text)[0]?.trim());
    const label = this.labelled(name);
    if (label !== undefined) return fit(label);
    if (typeof s.pattern === 'string') {
      try {
        const found = new RegExp(s.pattern.replace(/^\^/, '').replace(/\$$/, ''), 'u').exec(this.text);
        if (found) return fit(found[0]);
      } catch {
        // a pattern JavaScript cannot compile: fall through to the generic rules
      }
    }
    const focus = this.focus.trim();
    if (QUERY_NAMES.test(key) || key === '') return fit(focus || undefined);
    const first = splitSentences(HEADLINE_NAMES.test(key) ? focus || this.text : this.text, 1)[0];
    return fit(first);
  }

  private bound(s: JsonSchema, value: string): string {
    const max = typeof s.maxLength === 'number' ? s.maxLength : undefined;
    const min = typeof s.minLength === 'number' ? s.minLength : 0;
    let v = max !== undefined && [...value].length > max ? [...value].slice(0, max).join('').trimEnd() : value;
    while ([...v].length < min) v += ' ';
    return v;
  }

  private number(s: JsonSchema, name: string): number | undefined {
    const label = this.labelled(name);
    const raw = (label !== undefined ? matches(NUMBER_RE, label)[0] : undefined) ?? this.freeNumbers()[0];
    if (raw === undefined) return undefined;
    return this.clamp(s, Number(raw.replace(',', '.')));
  }

  /**
   * Numbers of the text that belong to nothing else: not inside a labelled value (`Seats: 12` answers `seats`
   * only), an e-mail address, a URL, a date or a phone number.
   */
  private freeNumbers(): string[] {
    const claimed: Array<[number, number]> = [];
    const claim = (re: RegExp) => {
      for (const m of this.text.matchAll(new RegExp(re.source, re.flags))) claimed.push([m.index ?? 0, (m.index ?? 0) + m[0].length]);
    };
    claim(LABELLED);
    for (const re of [EMAIL, URL_RE, DATETIME_RE, DATE_RE, PHONE_RE]) claim(re);
    return [...this.text.matchAll(NUMBER_RE)].filter((m) => !claimed.some(([a, b]) => (m.index ?? 0) >= a && (m.index ?? 0) < b)).map((m) => m[0]);
  }

  private clamp(s: JsonSchema, value: number): number {
    let v = Number.isFinite(value) ? value : 0;
    if (typeof s.minimum === 'number') v = Math.max(v, s.minimum);
    if (typeof s.exclusiveMinimum === 'number' && v <= s.exclusiveMinimum) v = s.exclusiveMinimum + (s.type === 'integer' ? 1 : Number.EPSILON);
    if (typeof s.maximum === 'number') v = Math.min(v, s.maximum);
    if (typeof s.exclusiveMaximum === 'number' && v >= s.exclusiveMaximum) v = s.exclusiveMaximum - (s.type === 'integer' ? 1 : Number.EPSILON);
    return s.type === 'integer' ? Math.round(v) : v;
  }

  private boolean(name: string): boolean {
    const label = this.labelled(name)?.toLowerCase();
    if (label !== undefined) {
      if (/^(?:true|yes|y|1|on)\b/.test(label)) return true;
      if (/^(?:false|no|n|0|off)\b/.test(label)) return false;
    }
    const terms = contentTerms(nameWords(name).replace(/^(?:is|has|can|should|needs?|was|are)\s+/, ''));
    if (terms.length === 0) return false;
    const tokens = words(this.text);
    const stems = contentTerms(this.text);
    if (!terms.every((t) => stems.includes(t))) return false;
    // Negated when a negation stands within two words before the first mention of the name's first term.
    const at = tokens.findIndex((w) => contentTerms(w)[0] === terms[0]);
    return !tokens.slice(Math.max(0, at - 2), at).some((w) => NEGATIONS.has(w));
  }

  private array(s: JsonSchema, name: string, depth: number): unknown[] {
    const items = this.resolve((s.items ?? {}) as JsonSchema);
    const key = snake(name);
    const min = typeof s.minItems === 'number' ? s.minItems : 0;
    const max = Math.max(min, typeof s.maxItems === 'number' ? s.maxItems : 5);
    let found: unknown[];
    if (Array.isArray(items.enum)) {
      const lower = this.text.toLowerCase();
      found = (items.enum as unknown[])
        .map((v) => ({ v, at: lower.search(new RegExp(`(?:^|[^\\p{L}\\p{N}])${escapeRegExp(String(v).toLowerCase())}(?![\\p{L}\\p{N}])`, 'u')) }))
        .filter((x) => x.at >= 0)
        .sort((a, b) => a.at - b.at)
        .map((x) => x.v);
    } else if (items.type === 'object' || items.properties) {
      found = [this.object(items, depth + 1)];
    } else if (items.type === 'number' || items.type === 'integer') {
      found = this.freeNumbers().map((n) => this.clamp(items, Number(n.replace(',', '.'))));
    } else if (items.format === 'email' || /e?_?mails?(?:_addresses)?$/.test(key)) {
      found = matches(EMAIL, this.text);
    } else if (items.format === 'uri' || /(?:urls|uris|links|websites)$/.test(key)) {
      found = matches(URL_RE, this.text);
    } else if (/(?:keywords|tags|topics|terms|entities|labels)$/.test(key)) {
      found = frequentWords(this.text).map((w) => this.bound(items, w));
    } else if (items.type === 'string') {
      found = splitSentences(this.text, max).map((x) => this.bound(items, x));
    } else {
      found = [];
    }
    const unique = s.uniqueItems ? [...new Map(found.map((v) => [JSON.stringify(v), v])).values()] : found;
    const out = unique.slice(0, max);
    while (out.length < min) out.push(this.empty(items, depth + 1));
    return out;
  }

  /** The smallest valid-looking value when the text gives nothing. */
  private empty(s: JsonSchema, depth: number): unknown {
    if ('default' in s) return s.default;
    if (Array.isArray(s.enum)) return (s.enum as unknown[])[0];
    switch (s.type) {
      case 'string':
        return this.bound(s, '');
      case 'number':
      case 'integer':
        return this.clamp(s, 0);
      case 'boolean':
        return false;
      case 'array':
        return Array.from({ length: typeof s.minItems === 'number' ? s.minItems : 0 }, () => this.empty(this.resolve((s.items ?? {}) as JsonSchema), depth + 1));
      case 'object': {
        const out: Record<string, unknown> = {};
        if (depth > 12) return out;
        const props = (s.properties ?? {}) as Record<string, JsonSchema>;
        for (const key of Array.isArray(s.required) ? (s.required as string[]) : []) {
          const prop = props[key];
          if (prop) out[key] = this.empty(this.resolve(prop), depth + 1);
        }
        return out;
      }
      default:
        return null;
    }
  }
}

/** The most frequent content words of a text (first occurrence breaks ties), as written, lower-cased. */
function frequentWords(text: string, limit = 5): string[] {
  const counts = new Map<string, { n: number; first: number; word: string }>();
  words(text.replace(EMAIL, ' ').replace(URL_RE, ' ')).forEach((w, i) => {
    const stem = contentTerms(w)[0];
    if (!stem || stem.length < 3 || /^\d+$/.test(stem)) return;
    const c = counts.get(stem);
    if (c) c.n += 1;
    else counts.set(stem, { n: 1, first: i, word: w });
  });
  return [...counts.values()]
    .sort((a, b) => b.n - a.n || a.first - b.first)
    .slice(0, limit)
    .map((c) => c.word);
}
