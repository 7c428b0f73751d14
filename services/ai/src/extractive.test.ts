import { groundAnswer, markersIn, type SourceChunk } from './citations';
import { extractiveAnswer, NO_ANSWER } from './extractive';

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
