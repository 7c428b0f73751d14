import { cutUnits } from '@lore/ai';
import type { JsonSchema, LanguageModel } from '@lore/ai';
import {
  COLUMN_TYPES,
  CRITERION_TYPES,
  MAX_PROMPT_CHARS,
  MAX_PROMPT_COUNT,
  columnWidths,
  extractCriteriaByRules,
  interpretCriterion,
  snakeCase,
  type Criterion,
  type ExtractOptions,
  type ExtractedCriteria,
  type SearchKind,
} from '../domain/criteria';
import { INDUSTRY_BY_ID } from '../domain/lexicon';

/**
 * The `criteria_extraction` step: a configured language model answers with structured output (`CRITERIA_SCHEMA`);
 * without one (or with the embedded extractive model), or when its answer is refused, unusable or late, the
 * deterministic extractor answers. Either way the result has the same shape and every criterion its widths.
 */

/** Most criteria kept from a model's answer. */
export const MAX_CRITERIA = 20;
const MAX_TEXT = 500;
const MAX_NAME = 80;

/** The JSON schema a model's answer must match (OpenAI structured outputs, strict). */
export const CRITERIA_SCHEMA: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['title', 'description', 'count', 'criteria'],
  properties: {
    title: { type: 'string', description: 'A short title for the list (at most 120 characters).' },
    description: { type: 'string', description: 'One sentence saying what the list holds.' },
    count: {
      anyOf: [{ type: 'integer' }, { type: 'null' }],
      description: 'How many rows the prompt asks for ("find 40 ..." is 40), or null when it names no number.',
    },
    criteria: {
      type: 'array',
      description: 'Every condition the prompt sets, one per column, and every extra column it asks to collect.',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'value', 'column_name', 'columnType', 'description', 'type'],
        properties: {
          name: { type: 'string', description: 'Display name, e.g. "Industry", "Location", "Company size".' },
          value: { type: 'string', description: 'What is asked for, e.g. "Fintech", "Berlin, Germany", "50-200", "2016 or later", "CTO". Empty for enrichment columns.' },
          column_name: { type: 'string', description: 'snake_case column name: industry, location, employees, founded, title, seniority, department, keywords, or another for a new column.' },
          columnType: { type: 'string', enum: [...COLUMN_TYPES] },
          description: { type: 'string', description: 'One sentence: what a row must satisfy, or what the column collects.' },
          type: { type: 'string', enum: [...CRITERION_TYPES], description: 'hard_filter: a row must match; soft_filter: preferred, ranks higher; enrichment: a value to collect, not a condition.' },
        },
      },
    },
  },
};

const SYSTEM = [
  'You turn a request for a list of companies or people into search criteria for a list-building agent.',
  'Answer with one JSON object matching the schema. Use these column names where they fit:',
  'industry (value: an industry such as Fintech, SaaS, Healthcare, Biotech, E-commerce, Logistics),',
  'location (value: a city with its country such as "Berlin, Germany", a country, or a region such as DACH),',
  'employees (value: a range "50-200", a minimum "501+", or a band: Startup, SMB, Mid-size, Enterprise),',
  'founded (value: "2016 or later", "1999 or earlier", "2010-2015" or a year),',
  'title (people: the role, such as "CTO", "Head of Marketing", "Senior engineer"; several joined with " or "),',
  'seniority (people: C-level, VP, Head, Director, Manager, Senior, Junior), department (people),',
  'keywords (comma-separated words that should appear). Columns the request asks to collect (emails, phone numbers,',
  'websites, funding) are type enrichment with an empty value. Explicit conditions are hard_filter; vague wishes',
  'are soft_filter. Do not invent conditions the request does not state.',
].join(' ');

export interface CriteriaResult extends ExtractedCriteria {
  /** Who answered: the configured model, or the deterministic rules. */
  source: 'model' | 'rules';
  /** Why the model's answer was not used (only when a model was asked and the rules answered). */
  fallback?: string;
}

export interface ExtractCriteriaOptions extends ExtractOptions {
  signal?: AbortSignal;
  /** Completion tokens the model may spend (default 1,500). */
  maxTokens?: number;
}

/**
 * Criteria for a prompt: from `model` when one is configured (not the embedded extractive model, whose structured
 * output is a rule-filled template, not a reading of the prompt), otherwise or on a bad answer from the rules.
 * A cancelled `signal` is rethrown, never turned into a fallback.
 */
export async function extractCriteria(model: LanguageModel | null, prompt: string, kind: SearchKind, options: ExtractCriteriaOptions = {}): Promise<CriteriaResult> {
  const rules = (fallback?: string): CriteriaResult => ({ ...extractCriteriaByRules(prompt, kind, options), source: 'rules', ...(fallback ? { fallback } : {}) });
  if (!model || model.kind === 'extractive') return rules();
  let answer: unknown;
  try {
    const completion = await model.chat({
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: `List of ${kind === 'person' ? 'people' : 'companies'}. Request: ${cutUnits(prompt, MAX_PROMPT_CHARS)}` },
      ],
      response_format: { type: 'json_schema', json_schema: { name: 'list_criteria', schema: CRITERIA_SCHEMA, strict: true } },
      maxTokens: options.maxTokens ?? 1_500,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    answer = completion.parsed;
  } catch (err) {
    if (options.signal?.aborted) throw err;
    return rules(cutUnits(`the model did not answer usably: ${(err as Error).message}`, MAX_TEXT));
  }
  const normalized = normalizeModelCriteria(answer, kind, options);
  if (typeof normalized === 'string') return rules(normalized);
  // A number the prompt states ("find 40 ...") is read exactly by the rules; a model that left it out does not lose it.
  const count = normalized.count ?? extractCriteriaByRules(prompt, kind, options).count;
  return { ...normalized, count, source: 'model' };
}

/**
 * A model's answer (already checked against `CRITERIA_SCHEMA`) made safe to store: strings trimmed and bounded,
 * column names snake_case and unique, widths from the column type, the count within limits. Returns why the
 * answer is unusable instead (no criterion at all).
 */
export function normalizeModelCriteria(answer: unknown, kind: SearchKind, options: ExtractOptions = {}): ExtractedCriteria | string {
  if (answer === null || typeof answer !== 'object') return 'the model answered no object';
  const a = answer as { title?: unknown; description?: unknown; count?: unknown; criteria?: unknown };
  if (!Array.isArray(a.criteria)) return 'the model answered no criteria';
  const criteria: Criterion[] = [];
  const columns = new Set<string>();
  for (const raw of a.criteria.slice(0, MAX_CRITERIA * 2)) {
    if (raw === null || typeof raw !== 'object') continue;
    const c = raw as Record<string, unknown>;
    const name = text(c.name, MAX_NAME);
    const column = snakeCase(text(c.column_name, MAX_NAME) || name);
    if (name === '' || columns.has(column)) continue;
    const type = CRITERION_TYPES.includes(c.type as never) ? (c.type as string) : 'soft_filter';
    const columnType = (COLUMN_TYPES as readonly string[]).includes(c.columnType as string) ? (c.columnType as string) : 'text';
    const value = text(c.value, MAX_TEXT);
    if (type !== 'enrichment' && value === '') continue;
    columns.add(column);
    criteria.push({ name, value, column_name: column, columnType, description: text(c.description, MAX_TEXT) || name, type, ...columnWidths(columnType) });
    if (criteria.length >= MAX_CRITERIA) break;
  }
  if (criteria.length === 0) return 'the model answered no usable criterion';
  const count = typeof a.count === 'number' && Number.isInteger(a.count) && a.count >= 1 && a.count <= MAX_PROMPT_COUNT ? a.count : null;
  const industryCriterion = criteria.find((c) => c.type !== 'enrichment' && interpretCriterion(c, options).dimension === 'industry');
  const industryConstraint = industryCriterion ? interpretCriterion(industryCriterion, options) : null;
  const industry = industryConstraint?.dimension === 'industry' ? (INDUSTRY_BY_ID.get(industryConstraint.industries[0]!)?.label ?? null) : null;
  const noun = kind === 'person' ? 'People' : 'Companies';
  return {
    kind,
    category: kind === 'person' ? 'people_search' : 'company_search',
    industry,
    title: text(a.title, 120) || noun,
    description: text(a.description, MAX_TEXT) || `${noun} matching the prompt.`,
    count,
    criteria,
    keywords: criteria
      .filter((c) => c.column_name === 'keywords')
      .flatMap((c) => c.value.split(/\s*,\s*/))
      .map((k) => k.toLowerCase())
      .filter((k) => k !== ''),
  };
}

/** A model's string: control characters (NUL included) become spaces, bounded, no lone surrogate left by the cut. */
function text(value: unknown, max: number): string {
  if (typeof value !== 'string') return '';
  return value
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .trim()
    .slice(0, max)
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '')
    .trim();
}
