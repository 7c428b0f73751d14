import { chunkText } from './chunking';

describe('chunking', () => {
  it('keeps whole sentences and respects the target size', () => {
    const sentence = 'The billing service retries failed card payments three times before it gives up.';
    const text = Array.from({ length: 30 }, () => sentence).join(' ');
    const chunks = chunkText(text, { targetWords: 40, maxWords: 80, maxChunks: 100 });
    expect(chunks.length).toBeGreaterThan(5);
    for (const c of chunks) {
      expect(c.content.endsWith('.')).toBe(true);
      expect(c.content.split(' ').length).toBeLessThanOrEqual(40);
    }
    expect(chunks.map((c) => c.ord)).toEqual(chunks.map((_, i) => i));
  });

  it('never mixes two Markdown sections in one chunk', () => {
    const chunks = chunkText('# Billing\nInvoices go out monthly.\n\n## Refunds\nRefunds take five days.');
    expect(chunks).toEqual([
      { ord: 0, content: 'Billing. Invoices go out monthly.', heading: 'Billing' },
      { ord: 1, content: 'Refunds. Refunds take five days.', heading: 'Refunds' },
    ]);
  });

  it('cuts a run-on text without punctuation', () => {
    const text = Array.from({ length: 500 }, (_, i) => `w${i}`).join(' ');
    const chunks = chunkText(text, { targetWords: 100, maxWords: 150, maxChunks: 100 });
    expect(chunks.length).toBe(4);
    expect(chunks.every((c) => c.content.split(' ').length <= 150)).toBe(true);
  });

  it('stops at the chunk limit', () => {
    const text = Array.from({ length: 100 }, (_, i) => `Sentence number ${i} is here.`).join('\n\n');
    expect(chunkText(text, { targetWords: 3, maxWords: 10, maxChunks: 7 })).toHaveLength(7);
  });

  it('returns nothing for blank input', () => {
    expect(chunkText('  \n\n ')).toEqual([]);
  });
});
