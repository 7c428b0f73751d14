import type { SourceChunk } from '@lore/ai';
import { suggestFollowups } from './followups';

const sources: SourceChunk[] = [
  { index: 1, title: 'Refund policy', document_id: 'd1', content: 'Refunds are issued within five business days. Returns need a receipt.' },
  { index: 2, title: 'Shipping', document_id: 'd2', content: 'Orders ship from Rotterdam. Express shipping takes one day.' },
];

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
