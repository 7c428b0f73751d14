import { citationStripper, searchToolCall, toolCallsOf, withoutCitations, type SearchDoc } from './answer-parts';

describe('withoutCitations', () => {
  it('removes every marker form the checker leaves and nothing else', () => {
    expect(withoutCitations('The fog horn sounds at nine [1]. Keepers log it [2, 3][4].')).toBe('The fog horn sounds at nine. Keepers log it.');
    expect(withoutCitations('Arrays like a[i] stay.')).toBe('Arrays like a[i] stay.');
  });
});

describe('citationStripper', () => {
  const answers = [
    'The fog horn sounds at nine [1]. Keepers log it [2, 3][4].',
    'Arrays like a[i] stay [1], and so do [12 apples] in brackets.',
    'Heron launches on 3 March [1].',
    '  Leading space [1]',
  ];

  it('sends, piece by piece however the answer is cut, exactly the answer without its markers', () => {
    for (const answer of answers) {
      // Every cut into two pieces, and one piece per character.
      const cuts = [...Array.from({ length: answer.length + 1 }, (_, i) => [answer.slice(0, i), answer.slice(i)]), [...answer]];
      for (const pieces of cuts) {
        const strip = citationStripper();
        const sent = pieces.map((p) => strip.push(p)).join('') + strip.end();
        expect({ pieces, sent }).toEqual({ pieces, sent: withoutCitations(answer) });
      }
    }
  });

  it('holds back only what may still become a marker', () => {
    const strip = citationStripper();
    expect(strip.push('Heron launches')).toBe('Heron launches');
    expect(strip.push(' on 3 March [')).toBe(' on 3 March');
    expect(strip.push('1')).toBe('');
    expect(strip.push('].')).toBe('.');
    expect(strip.end()).toBe('');
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
