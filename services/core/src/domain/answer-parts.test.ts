import { searchToolCall, toolCallsOf, withoutCitations, type SearchDoc } from './answer-parts';

describe('withoutCitations', () => {
  it('removes every marker form the checker leaves and nothing else', () => {
    expect(withoutCitations('The fog horn sounds at nine [1]. Keepers log it [2, 3][4].')).toBe('The fog horn sounds at nine. Keepers log it.');
    expect(withoutCitations('Arrays like a[i] stay.')).toBe('Arrays like a[i] stay.');
  });
});

describe('stored tool calls', () => {
  const doc = (id: string): SearchDoc => ({
    document_id: id,
    chunk_ind: 0,
    semantic_identifier: `${id}.txt`,
    link: `/d/${id}`,
    blurb: `about ${id}`,
    source_type: 'memory',
    boost: 0,
    hidden: false,
    metadata: {},
    score: 0.5,
    is_relevant: null,
    relevance_explanation: null,
    match_highlights: [],
    updated_at: '2026-11-29T00:00:00.000Z',
    primary_owners: null,
    secondary_owners: null,
    is_internet: false,
  });
  const documents = [doc('file'), doc('a'), doc('b')];

  it('shows a call stored as a slice of the message documents as the answer showed it', () => {
    const shown = searchToolCall({ tool_name: 'internal_search', tool_arguments: { queries: ['q'] } }, documents.slice(1));
    expect(shown.tool_result).toBe(JSON.stringify([{ document_id: 'a', semantic_identifier: 'a.txt', blurb: 'about a' }, { document_id: 'b', semantic_identifier: 'b.txt', blurb: 'about b' }]));
    const stored = [{ tool_name: 'internal_search', tool_arguments: { queries: ['q'] }, pre_reasoning: null, documents: [1, 3] }];
    expect(toolCallsOf(stored, documents)).toEqual([shown]);
  });

  it('shows a call stored whole (answers stored before the slice form) as it was stored', () => {
    const whole = searchToolCall({ tool_name: 'internal_search', tool_arguments: { queries: ['q'] } }, [doc('x')]);
    expect(toolCallsOf([whole], documents)).toEqual([whole]);
    expect(toolCallsOf([], documents)).toEqual([]);
  });
});
