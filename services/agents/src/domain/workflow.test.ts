import { columnIdOf, emptyState, isRunning, openCell, readState, rowIdOf, sourcedCell, tableColumns, type Criterion } from './workflow';

const criterion = (over: Partial<Criterion>): Criterion => ({
  name: 'Industry',
  value: 'Fintech',
  column_name: 'industry',
  columnType: 'badge',
  description: '',
  type: 'hard_filter',
  width: 150,
  maxWidth: 250,
  minWidth: 100,
  ...over,
});

describe('workflow domain', () => {
  it('derives a stable row id from the entity key, different for different entities', () => {
    expect(rowIdOf('acme.com')).toBe(rowIdOf('acme.com'));
    expect(rowIdOf('acme.com')).not.toBe(rowIdOf('acme.org'));
    expect(rowIdOf('acme.com')).toMatch(/^r_[0-9a-f]{20}$/);
  });

  it('makes snake_case column ids, never empty', () => {
    expect(columnIdOf('Key contacts')).toBe('key_contacts');
    expect(columnIdOf('  Founded (year) ')).toBe('founded_year');
    expect(columnIdOf('Café-Band')).toBe('cafe_band');
    expect(columnIdOf('employees')).toBe('employees');
    expect(columnIdOf('!!!')).not.toBe('');
    expect(columnIdOf('x'.repeat(100))).toHaveLength(64);
  });

  it('builds the table: fixed columns, one per criterion not already a fixed one, then extra columns, no id twice', () => {
    const cols = tableColumns('company_search', [criterion({}), criterion({ name: 'Company size', column_name: 'employees', columnType: 'number', width: 120 })], [
      { id: 'enrich_ceo', header: 'CEO', type: 'enrichment', columnType: 'text', dataType: 'string', width: 200, maxWidth: 600, minWidth: 80, required: false },
      { id: 'employees', header: 'dup', type: 'enrichment', columnType: 'text', dataType: 'string', width: 200, maxWidth: 600, minWidth: 80, required: false },
    ]);
    expect(cols.map((c) => c.id)).toEqual(['name', 'domain', 'industry', 'location', 'employees', 'enrich_ceo']);
    expect(cols.find((c) => c.id === 'employees')).toMatchObject({ header: 'Company size', type: 'criterion', columnType: 'number', width: 120, required: false });
    expect(cols.find((c) => c.id === 'name')).toMatchObject({ type: 'fixed', required: true });
    expect(tableColumns('people_search', []).map((c) => c.id)).toEqual(['name', 'title', 'company', 'profile_url', 'location']);
  });

  it('marks a cell completed only with a source', () => {
    const p = { source: 'web' as const, source_url: 'https://acme.com/', snippet: 'Acme', fetched_at: '2026-01-01T00:00:00.000Z' };
    expect(sourcedCell('r1', 'name', 'Acme', p)).toEqual({ row_id: 'r1', column_id: 'name', value: 'Acme', status: 'completed', metadata: p, expandable: true });
    expect(sourcedCell('r1', 'name', 'Acme', { ...p, source: 'directory' }).expandable).toBe(false);
    expect(openCell('r1', 'x', 'error', 'no source states it')).toEqual({ row_id: 'r1', column_id: 'x', value: '', status: 'error', metadata: { reason: 'no source states it' }, expandable: false });
  });

  it('reads a stored state, filling what an older row lacks', () => {
    expect(readState(null)).toEqual(emptyState());
    const s = readState({ title: 'T', spent: { fetches: 3 }, cursor: { web_pages: 2 } });
    expect(s.title).toBe('T');
    expect(s.spent).toEqual({ fetches: 3, model_tokens: 0, wall_ms: 0 });
    expect(s.cursor).toEqual({ directory_offset: 0, web_pages: 2, exhausted: false });
    expect(s.enrichments).toEqual({});
  });

  it('knows the running statuses', () => {
    expect(['processing', 'continuing', 'stopping'].every(isRunning)).toBe(true);
    expect(['completed', 'stopped', 'error', 'analyzing'].some(isRunning)).toBe(false);
  });
});
