import { ExtractiveLanguageModel, OpenAiLanguageModel } from '@lore/ai';
import { CRITERIA_SCHEMA, extractCriteria, extractCriteriaByRules } from '@lore/agents';
import { LoopbackModel } from '../support/loopback-model';

/**
 * Criteria extraction with a configured language model (services/agents/src/application/criteria.ts): the model is
 * asked for structured output against CRITERIA_SCHEMA over the OpenAI wire format (the loopback model), its answer
 * is normalised, and a refused, empty or missing answer falls back to the deterministic rules (docs/agents.md,
 * "Criteria and scoring").
 */

const NOW = new Date('2026-11-25T12:00:00Z');
const PROMPT = 'Find 40 fintech companies in Berlin with 50-200 employees';
let model: LoopbackModel;
let lm: OpenAiLanguageModel;

beforeAll(async () => {
  model = await new LoopbackModel().start();
  lm = new OpenAiLanguageModel({ baseUrl: model.url, model: 'loopback', timeoutMs: 5_000, retries: 0 });
});
afterAll(async () => {
  await model?.stop();
});
beforeEach(() => {
  model.turns = [];
  model.bodies = [];
});

const answer = {
  title: 'Fintech in Berlin',
  description: 'Fintech companies in Berlin with 50 to 200 employees.',
  count: 40,
  criteria: [
    { name: 'Industry', value: 'Fintech', column_name: 'industry', columnType: 'badge', description: 'Works in fintech.', type: 'hard_filter' },
    { name: 'Location', value: 'Berlin, Germany', column_name: 'Location', columnType: 'text', description: 'Based in Berlin.', type: 'hard_filter' },
    { name: 'Company Size', value: '50-200', column_name: 'Company Size', columnType: 'number', description: '50 to 200 employees.', type: 'hard_filter' },
    { name: 'Industry again', value: 'Payments', column_name: 'industry', columnType: 'badge', description: 'duplicate column', type: 'soft_filter' },
    { name: 'Email', value: '', column_name: 'email', columnType: 'email', description: 'A contact address.', type: 'enrichment' },
  ],
};

describe('extractCriteria with a configured model', () => {
  it('asks for structured output and keeps the normalised answer', async () => {
    model.turns = [{ content: JSON.stringify(answer) }];
    const r = await extractCriteria(lm, PROMPT, 'company', { now: NOW });
    expect(r.source).toBe('model');
    expect(r.fallback).toBeUndefined();
    expect(r).toMatchObject({ kind: 'company', category: 'company_search', industry: 'Fintech', title: 'Fintech in Berlin', count: 40 });
    expect(r.criteria.map((c) => [c.column_name, c.value, c.type])).toEqual([
      ['industry', 'Fintech', 'hard_filter'],
      ['location', 'Berlin, Germany', 'hard_filter'],
      ['company_size', '50-200', 'hard_filter'],
      ['email', '', 'enrichment'],
    ]);
    for (const c of r.criteria) expect(c.minWidth).toBeLessThanOrEqual(c.width);
    expect(r.criteria[2]).toMatchObject({ width: 120, minWidth: 80, maxWidth: 200 });

    expect(model.bodies).toHaveLength(1);
    const body = model.bodies[0] as unknown as { response_format?: { type: string; json_schema: { name: string; schema: unknown } }; messages: Array<{ role: string; content: string }> };
    expect(body.response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'list_criteria', schema: CRITERIA_SCHEMA } });
    expect(body.messages.at(-1)!.content).toContain(PROMPT);
  });

  it('keeps the count the prompt states when the model leaves it out', async () => {
    model.turns = [{ content: JSON.stringify({ ...answer, count: null }) }];
    expect(await extractCriteria(lm, PROMPT, 'company', { now: NOW })).toMatchObject({ source: 'model', count: 40 });
    model.turns = [{ content: JSON.stringify({ ...answer, count: null }) }];
    expect(await extractCriteria(lm, 'fintech companies in Berlin', 'company', { now: NOW })).toMatchObject({ source: 'model', count: null });
  });

  it('falls back to the rules when the model answers no JSON, after its one retry', async () => {
    model.turns = [{ content: 'Sure! Here are some criteria: fintech, Berlin.' }, { content: 'Still not JSON.' }];
    const r = await extractCriteria(lm, PROMPT, 'company', { now: NOW });
    expect(r.source).toBe('rules');
    expect(r.fallback).toMatch(/did not answer usably/);
    expect(model.bodies).toHaveLength(2);
    const { source: _s, fallback: _f, ...rest } = r;
    expect(rest).toEqual(extractCriteriaByRules(PROMPT, 'company', { now: NOW }));
  });

  it('falls back when the answer breaks the schema or holds no usable criterion', async () => {
    const broken = { ...answer, criteria: [{ ...answer.criteria[0], type: 'must_have' }] };
    model.turns = [{ content: JSON.stringify(broken) }, { content: JSON.stringify(broken) }];
    expect(await extractCriteria(lm, PROMPT, 'company', { now: NOW })).toMatchObject({ source: 'rules' });
    model.turns = [{ content: JSON.stringify({ ...answer, criteria: [{ ...answer.criteria[0], name: '  ', value: '' }] }) }];
    const empty = await extractCriteria(lm, PROMPT, 'company', { now: NOW });
    expect(empty).toMatchObject({ source: 'rules', fallback: 'the model answered no usable criterion' });
    expect(empty.criteria.map((c) => c.column_name)).toEqual(['industry', 'location', 'employees']);
  });

  it('falls back when the model cannot be reached', async () => {
    const down = new OpenAiLanguageModel({ baseUrl: 'http://127.0.0.1:9/v1', model: 'loopback', timeoutMs: 1_000, retries: 0 });
    const r = await extractCriteria(down, 'CTOs in London', 'person', { now: NOW });
    expect(r).toMatchObject({ source: 'rules', category: 'people_search' });
    expect(r.criteria.map((c) => c.value)).toEqual(['CTO', 'London, United Kingdom']);
  });

  it('uses the rules without asking when no model or the embedded extractive model is configured', async () => {
    expect(await extractCriteria(null, PROMPT, 'company', { now: NOW })).toMatchObject({ source: 'rules', count: 40 });
    const r = await extractCriteria(new ExtractiveLanguageModel(), PROMPT, 'company', { now: NOW });
    expect(r.source).toBe('rules');
    expect(r.fallback).toBeUndefined();
    expect(model.bodies).toHaveLength(0);
  });

  it('rethrows a cancellation instead of falling back', async () => {
    model.turns = [{ content: JSON.stringify(answer) }];
    const controller = new AbortController();
    controller.abort();
    await expect(extractCriteria(lm, PROMPT, 'company', { now: NOW, signal: controller.signal })).rejects.toThrow();
  });
});
