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

  it('offers no fragment or common word as a name, and nothing after an answer that cited nothing (QA F11)', () => {
    const faq: SourceChunk[] = [
      { index: 1, title: 'Customer FAQ', document_id: 'd1', content: 'Standard support is available Monday to Friday, 08:00 to 18:00 CET. First, read the status page. Complete the form; the first reply comes once you complete it.' },
    ];
    const f = suggestFollowups('When is support available?', faq, ['00 CET', 'Sundays 02', 'First', 'Complete', 'Read', 'Monday']);
    expect(f).toEqual(['What else does the memory say about Monday?', 'What are the key points of "Customer FAQ"?', 'Which sources disagree about When is support available?']);
    expect(suggestFollowups('When is support available?', faq, ['Monday'], 3, false)).toEqual([]);
  });
});
