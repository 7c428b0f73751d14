import { availableContextTokens, CONTEXT, countTokens, maxDocumentTokens } from './tokens';

describe('token counts', () => {
  it('counts with a real tokenizer: words are not characters, and special-token text is plain text', () => {
    expect(countTokens('')).toBe(0);
    const n = countTokens('The quick brown fox jumps over the lazy dog.');
    expect(n).toBeGreaterThan(5);
    expect(n).toBeLessThan(15);
    expect(countTokens('a <|endoftext|> b')).toBeGreaterThan(3);
  });

  it('gives documents half of what instructions and the answer reserve leave, and the session what its messages leave', () => {
    const instructions = 'Answer briefly.';
    const free = CONTEXT.defaultWindow - countTokens(instructions) - CONTEXT.answerReserve;
    expect(maxDocumentTokens(instructions)).toBe(Math.floor(free / 2));
    expect(availableContextTokens(instructions, 1000)).toBe(free - 1000);
    expect(availableContextTokens(instructions, 10_000_000)).toBe(0);
  });
});
