import { foldEvent, initialFrame, isEnded, mergeCriteria, sseFrame, targetChosen, toCriterion, withAdditionalCriteria, type LoggedEvent, type StreamFrame } from './generic-workflow';
import { SEED_PROMPTS, SEED_TYPES, seedSummary, startedStatus } from './seed';

describe('criteria a caller sends', () => {
  it('are made whole: snake_case column from the name, hard filter and text by default, widths by column type', () => {
    expect(toCriterion({ name: '  Uses Kubernetes ' })).toEqual({
      name: 'Uses Kubernetes',
      value: '',
      column_name: 'uses_kubernetes',
      columnType: 'text',
      description: '',
      type: 'hard_filter',
      width: 200,
      maxWidth: 400,
      minWidth: 120,
    });
    expect(toCriterion({ name: 'Size', column_name: 'Company Size', columnType: 'number', type: 'soft_filter', width: 90 })).toMatchObject({ column_name: 'company_size', columnType: 'number', type: 'soft_filter', width: 90, maxWidth: 200, minWidth: 80 });
  });

  it('merge by column: a criterion with the same column replaces the old one in place, others are appended, at most 30', () => {
    const a = toCriterion({ name: 'Industry', value: 'Fintech' });
    const b = toCriterion({ name: 'Location', value: 'Berlin' });
    const a2 = toCriterion({ name: 'Industry', value: 'Insurtech' });
    const c = toCriterion({ name: 'Remote' });
    expect(mergeCriteria([a, b], [a2, c]).map((x) => [x.column_name, x.value])).toEqual([
      ['industry', 'Insurtech'],
      ['location', 'Berlin'],
      ['remote', ''],
    ]);
    const many = Array.from({ length: 40 }, (_, i) => toCriterion({ name: `c ${i}` }));
    expect(mergeCriteria([], many)).toHaveLength(30);
  });

  it('join the extracted ones from the state document; a chosen target is remembered', () => {
    const extracted = [toCriterion({ name: 'Industry', value: 'Fintech' })];
    expect(withAdditionalCriteria(extracted, {}).map((c) => c.column_name)).toEqual(['industry']);
    expect(withAdditionalCriteria(extracted, { additional_criteria: [toCriterion({ name: 'Remote' })] }).map((c) => c.column_name)).toEqual(['industry', 'remote']);
    expect(withAdditionalCriteria(extracted, { additional_criteria: 'junk' }).map((c) => c.column_name)).toEqual(['industry']);
    expect(targetChosen({ target_chosen: true })).toBe(true);
    expect(targetChosen({})).toBe(false);
  });
});

const ev = (seq: number, type: string, data: Record<string, unknown> = {}): LoggedEvent => ({ seq, type, data, at: `2026-01-01T00:00:0${seq % 10}.000Z` });
const fold = (events: LoggedEvent[]): StreamFrame[] => {
  const out: StreamFrame[] = [];
  let f = initialFrame('t-1');
  for (const e of events) out.push((f = foldEvent(f, e)));
  return out;
};

describe('stream frames folded from the event log', () => {
  const crit = [toCriterion({ name: 'Industry', value: 'Fintech' })];
  const log = [
    ev(1, 'started', { list_id: 'l-1', total_target: 3 }),
    ev(2, 'criteria_extracted', { criteria: crit, total_target: 3 }),
    ev(3, 'rows_added', { added: 2, total: 2, total_target: 3 }),
    ev(4, 'rows_added', { added: 1, total: 3, total_target: 3 }),
    ev(5, 'rows_enriched', { rows: 3, left: 0 }),
    ev(6, 'completed', { rows: 3 }),
    ev(7, 'continued', { total_target: 5, criteria: [...crit, toCriterion({ name: 'Remote' })] }),
    ev(8, 'stop_requested'),
    ev(9, 'stopped'),
  ];

  it('tell the workflow after each event: status, step, criteria, list, counts', () => {
    const frames = fold(log);
    expect(frames.map((f) => [f.seq, f.event, f.status, f.current_step, f.current_count, f.total_target])).toEqual([
      [1, 'started', 'processing', 'criteria_extraction', 0, 3],
      [2, 'criteria_extracted', 'processing', 'data_collection', 0, 3],
      [3, 'rows_added', 'processing', 'data_collection', 2, 3],
      [4, 'rows_added', 'processing', 'enrichment', 3, 3],
      [5, 'rows_enriched', 'processing', 'enrichment', 3, 3],
      [6, 'completed', 'completed', 'completed', 3, 3],
      [7, 'continued', 'continuing', 'data_collection', 3, 5],
      [8, 'stop_requested', 'stopping', 'data_collection', 3, 5],
      [9, 'stopped', 'stopped', 'data_collection', 3, 5],
    ]);
    expect(frames.every((f) => f.list_id === 'l-1' && f.thread_id === 't-1')).toBe(true);
    expect(frames[1]!.criteria).toEqual(crit);
    expect(frames[6]!.criteria.map((c) => c.column_name)).toEqual(['industry', 'remote']);
    expect(frames.map((f) => isEnded(f.status))).toEqual([false, false, false, false, false, true, false, false, true]);
  });

  it('are the same whether folded at once or resumed part way (a replay gives the frames a live reader got)', () => {
    const whole = fold(log);
    let f = initialFrame('t-1');
    for (const e of log.slice(0, 4)) f = foldEvent(f, e);
    const rest: StreamFrame[] = [];
    for (const e of log.slice(4)) rest.push((f = foldEvent(f, e)));
    expect(rest).toEqual(whole.slice(4));
  });

  it('carry an ended run\'s message, an enrichment reopening an ended workflow, a removal\'s criteria; unknown events change nothing', () => {
    const frames = fold([
      ev(1, 'started', { list_id: 'l-1' }),
      ev(2, 'budget_spent', { message: 'budget spent: fetches' }),
      ev(3, 'enrichment_started', { column_id: 'enrich_x' }),
      ev(4, 'criteria_removed', { criteria: [] }),
      ev(5, 'something_new', { x: 1 }),
      ev(6, 'error', { message: 'boom' }),
    ]);
    expect(frames[1]).toMatchObject({ status: 'completed', current_step: 'completed', message: 'budget spent: fetches' });
    expect(frames[2]).toMatchObject({ status: 'processing', current_step: 'enrichment', message: '' });
    expect(frames[3]!.criteria).toEqual([]);
    expect(frames[4]).toMatchObject({ status: 'processing', current_step: 'enrichment', data: { x: 1 } });
    expect(frames[5]).toMatchObject({ status: 'error', message: 'boom' });
  });

  it('are written as one `id:` line and one `data:` line', () => {
    const f = fold([ev(1, 'started', { list_id: 'l-1', prompt: 'two\nlines' })])[0]!;
    const text = sseFrame(f);
    expect(text.endsWith('\n\n')).toBe(true);
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe('id: 1');
    expect(JSON.parse(lines[1]!.slice('data: '.length))).toEqual(f);
  });
});

describe('seed prompts and statuses', () => {
  it('has five prompts a type, with unique stable ids', () => {
    for (const type of SEED_TYPES) {
      const prompts = SEED_PROMPTS[type];
      expect(prompts).toHaveLength(5);
      expect(new Set(prompts.map((p) => p.prompt_id)).size).toBe(5);
      for (const p of prompts) expect(p.prompt_id).toMatch(new RegExp(`^${type}-[a-z0-9-]+$`));
    }
    expect(startedStatus('company')).toBe('list_created');
    expect(startedStatus('people')).toBe('people_workflow_started');
  });

  it('counts every status in the summary', () => {
    expect(seedSummary([{ status: 'completed' }, { status: 'completed' }, { status: 'failed' }, { status: 'people_workflow_started' }, { status: 'pending' }])).toEqual({
      total: 5,
      pending: 1,
      processing: 0,
      list_created: 0,
      people_workflow_started: 1,
      completed: 2,
      failed: 1,
      skipped: 0,
    });
  });
});
