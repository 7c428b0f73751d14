import { z } from 'zod';
import { normalizeObjectSchema } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import { toJsonSchemaCompat } from '@modelcontextprotocol/sdk/server/zod-json-schema-compat.js';
import { allTools } from './registry';
import type { AnyTool } from './define';

/**
 * Spec 3: "String arguments need at least 1 character; integer caps need a value of at least 1." Checked on every
 * registered tool's input schema as clients see it (the JSON Schema the SDK lists), down to nested fields, array
 * items and record keys, so a new tool cannot slip in an empty string or a zero cap.
 */

type Json = Record<string, unknown>;

/** String formats that no empty string satisfies. */
const NON_EMPTY_FORMATS = new Set(['uuid', 'date-time']);

/**
 * The only numeric arguments whose least value is below 1, each for a reason: they are no caps. Keyed `tool:path`.
 */
const BELOW_ONE: Record<string, string> = {
  'company_database_search:offset': 'a position: 0 is the first record',
  'people_database_search:offset': 'a position: 0 is the first record',
  'enterprise_create_chat_session:persona_id': 'an id, and 0 is the default persona',
};

/**
 * Subtrees that are data relayed as it is, not arguments: their strings may be empty (an empty cell of a list).
 */
const RELAYED: Record<string, string> = {
  'memory_generate:records': 'the rows get_search_results answered, handed on unchanged',
};

function inputJsonSchema(tool: AnyTool): Json {
  const obj = normalizeObjectSchema(tool.input);
  if (!obj) throw new Error(`${tool.name}: the input schema is not an object schema`);
  return toJsonSchemaCompat(obj, { strictUnions: true, pipeStrategy: 'input' }) as Json;
}

/** Every argument (at any depth) that breaks the rule, as `tool:path: what`. */
function violations(tool: AnyTool): string[] {
  const out: string[] = [];
  const visit = (node: unknown, path: string): void => {
    if (typeof node === 'boolean' || node === undefined) return;
    const s = node as Json;
    const at = `${tool.name}:${path}`;
    if (RELAYED[at]) return;
    if (s.$ref !== undefined) out.push(`${at}: $ref is not followed by this check`);
    const types = Array.isArray(s.type) ? (s.type as string[]) : s.type === undefined ? [] : [s.type as string];
    if (types.includes('string')) {
      const enumerated = Array.isArray(s.enum) && (s.enum as unknown[]).every((v) => typeof v !== 'string' || v.length > 0);
      const nonEmptyFormat = typeof s.format === 'string' && NON_EMPTY_FORMATS.has(s.format);
      if (!enumerated && !nonEmptyFormat && !(typeof s.minLength === 'number' && s.minLength >= 1)) out.push(`${at}: a string without minLength 1`);
    }
    if (types.includes('integer') || types.includes('number')) {
      const least = typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + 1 : -Infinity;
      if (!types.includes('integer')) out.push(`${at}: a number that is not an integer`);
      if (least < 1 && !BELOW_ONE[at]) out.push(`${at}: an integer whose minimum is ${least}`);
    }
    for (const [k, v] of Object.entries((s.properties as Json | undefined) ?? {})) visit(v, path ? `${path}.${k}` : k);
    if (s.additionalProperties !== undefined) visit(s.additionalProperties, `${path}{}`);
    if (s.propertyNames !== undefined) visit(s.propertyNames, `${path}{key}`);
    if (Array.isArray(s.items)) (s.items as unknown[]).forEach((v, i) => visit(v, `${path}[${i}]`));
    else if (s.items !== undefined) visit(s.items, `${path}[]`);
    if (Array.isArray(s.prefixItems)) (s.prefixItems as unknown[]).forEach((v, i) => visit(v, `${path}[${i}]`));
    for (const key of ['anyOf', 'oneOf', 'allOf'] as const) if (Array.isArray(s[key])) (s[key] as unknown[]).forEach((v) => visit(v, path));
  };
  visit(inputJsonSchema(tool), '');
  return out;
}

describe('every registered tool', () => {
  const tools = allTools();

  it('asks at least 1 character of every string argument and at least 1 of every integer cap', () => {
    expect(tools.length).toBeGreaterThan(40);
    expect(tools.flatMap(violations)).toEqual([]);
  });

  it('names only existing arguments in its exceptions', () => {
    const paths = new Set<string>();
    for (const tool of tools) {
      const collect = (node: unknown, path: string) => {
        if (typeof node !== 'object' || node === null) return;
        paths.add(`${tool.name}:${path}`);
        for (const [k, v] of Object.entries(((node as Json).properties as Json | undefined) ?? {})) collect(v, path ? `${path}.${k}` : k);
      };
      collect(inputJsonSchema(tool), '');
    }
    for (const at of [...Object.keys(BELOW_ONE), ...Object.keys(RELAYED)]) expect(paths).toContain(at);
  });

  it('catches the empty strings and zero caps it is there for', () => {
    // The check itself, on arguments that break the rule (memory_create_department once took an empty description,
    // enterprise_create_connector an empty configuration field name).
    const probe = {
      ...tools[0]!,
      name: 'probe',
      input: z.object({
        a: z.string().max(5).optional(),
        b: z.record(z.string(), z.unknown()),
        c: z.array(z.object({ d: z.number().int().min(0) })),
        e: z.number().min(1),
        f: z.uuid(),
      }),
    };
    expect(violations(probe)).toEqual([
      'probe:a: a string without minLength 1',
      'probe:b{key}: a string without minLength 1',
      'probe:c[].d: an integer whose minimum is 0',
      'probe:e: a number that is not an integer',
    ]);
  });
});
