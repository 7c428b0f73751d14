import { countTokens as libraryCount } from 'gpt-tokenizer';
import { availableContextTokens, CONTEXT, countTokens, countTokensYielding, maxDocumentTokens } from './tokens';

jest.mock('gpt-tokenizer', () => {
  const actual = jest.requireActual<typeof import('gpt-tokenizer')>('gpt-tokenizer');
  return { ...actual, countTokens: jest.fn(actual.countTokens) };
});
const counted = libraryCount as jest.MockedFunction<typeof libraryCount>;
const PLAIN = { disallowedSpecial: new Set<string>() };
/** The longest run of one kind (letters, symbols, white space) the tokenizer itself was given since the last clear. */
const longestRunGiven = () =>
  Math.max(0, ...counted.mock.calls.flatMap(([text]) => [...String(text).matchAll(/[\p{L}\p{M}]+|[^\s\p{L}\p{M}\p{N}]+|\s+/gu)].map((m) => m[0].length)));

describe('token counts', () => {
  beforeEach(() => counted.mockClear());

  it('counts with a real tokenizer: words are not characters, and special-token text is plain text', () => {
    expect(countTokens('')).toBe(0);
    const n = countTokens('The quick brown fox jumps over the lazy dog.');
    expect(n).toBeGreaterThan(5);
    expect(n).toBeLessThan(15);
    expect(countTokens('a <|endoftext|> b')).toBeGreaterThan(3);
  });

  it('counts ordinary text exactly as the tokenizer does with the whole of it', () => {
    const english = 'Lighthouse keepers on Skerry Point log the fog horn every evening at nine; the lamp was electrified in 1961. '.repeat(50);
    const japanese = '東京の灯台守は、毎晩九時に霧笛を記録する。ランプは一九六一年に電化された。'.repeat(20);
    // No spaces between Thai words: a sentence is one run of letters.
    const thai = 'ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรคระหว่างคำซึ่งทำให้การตัดคำยากมากสำหรับคอมพิวเตอร์ '.repeat(20);
    const german = 'Die Donaudampfschifffahrtsgesellschaftskapitänsmütze liegt auf dem Tisch. '.repeat(20);
    for (const text of [english, japanese, thai, german]) expect(countTokens(text)).toBe(libraryCount(text, PLAIN));
  });

  it('never gives the tokenizer a run of one kind longer than 256 (its time grows with the square of a run), and counts a long run closely', () => {
    const dna = Array.from({ length: 4_000 }, (_, i) => 'ACGT'[(i * 7 + (i >> 3)) % 4]).join('');
    const cjk = `${'漢'.repeat(1_500)}😀${'字'.repeat(1_500)}`;
    const emoji = '😀🎉'.repeat(1_500);
    const punctuation = '-=*'.repeat(1_000);
    const spaces = `a${' '.repeat(3_000)}b`;
    for (const text of [dna, cjk, `before ${dna} after`, emoji, punctuation, spaces]) {
      counted.mockClear();
      const n = countTokens(text);
      expect(longestRunGiven()).toBeLessThanOrEqual(256);
      const whole = libraryCount(text, PLAIN);
      expect(Math.abs(n - whole) / whole).toBeLessThan(0.1);
    }
  });

  it('counts a long text a slice at a time, letting the event loop run between slices, to the same count within a few tokens', async () => {
    const text = 'Lighthouse keepers log the fog horn every evening at nine. '.repeat(4_000);
    let turns = 0;
    let on = true;
    const tick = () => {
      turns++;
      if (on) setImmediate(tick);
    };
    setImmediate(tick);
    const n = await countTokensYielding(text);
    on = false;
    expect(turns).toBeGreaterThan(5);
    expect(Math.abs(n - countTokens(text))).toBeLessThanOrEqual(20);
    expect(await countTokensYielding('')).toBe(0);
  });

  it('gives documents half of what instructions and the answer reserve leave, and the session what its messages leave', () => {
    const instructions = 'Answer briefly.';
    const free = CONTEXT.defaultWindow - countTokens(instructions) - CONTEXT.answerReserve;
    expect(maxDocumentTokens(instructions)).toBe(Math.floor(free / 2));
    expect(availableContextTokens(instructions, 1000)).toBe(free - 1000);
    expect(availableContextTokens(instructions, 10_000_000)).toBe(0);
  });
});
