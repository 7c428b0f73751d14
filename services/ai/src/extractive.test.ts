import { groundAnswer, markersIn, type SourceChunk } from './citations';
import { extractiveAnswer, NO_ANSWER, suggestFollowups } from './extractive';
import { assessHealth } from './health';

const sources: SourceChunk[] = [
  { index: 1, title: 'Refund policy', document_id: 'd1', content: 'Refunds are issued within five business days. Returns need a receipt.' },
  { index: 2, title: 'Shipping', document_id: 'd2', content: 'Orders ship from Rotterdam. Express shipping takes one day.' },
];

describe('extractive answerer', () => {
  it('quotes the best sentences with the marker of their chunk', () => {
    const answer = extractiveAnswer('How long do refunds take?', sources);
    expect(answer).toBe('Refunds are issued within five business days [1].');
  });

  it('produces answers that pass the grounding check unchanged', () => {
    for (const q of ['How long do refunds take?', 'Where do orders ship from and how fast is express shipping?']) {
      const answer = extractiveAnswer(q, sources);
      const grounded = groundAnswer(answer, sources);
      expect(grounded.answer).toBe(answer);
      expect(grounded.removed_markers).toBe(0);
      expect(markersIn(answer).length).toBeGreaterThan(0);
    }
  });

  it('says so when nothing matches', () => {
    expect(extractiveAnswer('What is the capital of Peru?', sources)).toBe(NO_ANSWER);
    expect(extractiveAnswer('refunds', [])).toBe(NO_ANSWER);
  });
});

describe('follow-ups', () => {
  it('suggests unasked entities and titles, at most three', () => {
    const f = suggestFollowups('How long do refunds take?', sources, ['Rotterdam', 'Refunds']);
    expect(f).toEqual([
      'What else does the memory say about Rotterdam?',
      'What are the key points of "Refund policy"?',
      'What are the key points of "Shipping"?',
    ]);
  });
});

describe('health', () => {
  const base = { documents: 100, indexed: 100, failed: 0, stale: 0, needs_review: 0, open_contradictions: 0, dlp_flagged: 0, duplicates: 0, vaults: 3, empty_vaults: 0 };
  it('is 100 for a clean memory', () => {
    expect(assessHealth(base)).toMatchObject({ score: 100, status: 'healthy', diagnostics: [] });
  });
  it('drops with failures, backlog and contradictions and explains why', () => {
    const h = assessHealth({ ...base, failed: 10, needs_review: 30, open_contradictions: 5 });
    expect(h.score).toBe(71);
    expect(h.status).toBe('degraded');
    expect(h.diagnostics.map((d) => d.code)).toEqual(['indexing_failed', 'review_backlog', 'open_contradictions']);
  });
  it('never leaves [0, 100]', () => {
    const h = assessHealth({ ...base, documents: 1, indexed: 0, failed: 1, stale: 1, needs_review: 1, open_contradictions: 9, duplicates: 1, vaults: 0 });
    expect(h.score).toBe(0);
  });
});
