import { AUTOMATIC_NAME_FALLBACK, AUTOMATIC_NAME_MAX, automaticName, turnSourceTypes, VISIBLE } from './chat-rules';

describe('a session\'s automatic name', () => {
  it('keeps a short question whole and cuts a long one to the limit', () => {
    expect(automaticName('When are penguins fed?')).toBe('When are penguins fed?');
    expect(automaticName('a'.repeat(300))).toBe('a'.repeat(AUTOMATIC_NAME_MAX));
  });

  it('never cuts an emoji in half: the cut falls before a character that would cross the limit', () => {
    const name = automaticName(`${'a'.repeat(119)}😀 penguins`);
    expect(name).toBe('a'.repeat(119));
    // A flag (two code points) and a family (a ZWJ sequence) stay whole or are left out whole.
    expect(automaticName(`${'a'.repeat(116)}🇳🇴 and more`)).toBe(`${'a'.repeat(116)}🇳🇴`);
    expect(automaticName(`${'a'.repeat(117)}🇳🇴 and more`)).toBe('a'.repeat(117));
    expect(automaticName(`${'a'.repeat(115)}👨‍👩‍👧 family`)).toBe('a'.repeat(115));
  });

  it('is never empty for a question: a first character longer than the limit is cut between code points, a start with nothing to read gives a default', () => {
    // A letter under 300 combining accents is one grapheme of 301 code units.
    const accented = `a${'\u0301'.repeat(300)} what is the budget?`;
    expect(automaticName(accented)).toBe(`a${'\u0301'.repeat(AUTOMATIC_NAME_MAX - 1)}`);
    // Between code points, never inside an emoji's surrogate pair.
    const emojiFirst = `😀${'\u0301'.repeat(130)}`;
    const cut = automaticName(emojiFirst);
    expect(cut).toBe(`😀${'\u0301'.repeat(AUTOMATIC_NAME_MAX - 2)}`);
    expect(cut.codePointAt(0)).toBe(0x1f600);
    // The first 120 code units all invisible (zero-width spaces) before the text: nothing there to read.
    expect(automaticName(`${'\u200b'.repeat(130)}penguins`)).toBe(AUTOMATIC_NAME_FALLBACK);
    // No question at all: no name (the session is named by its first question later).
    expect(automaticName('')).toBe('');
  });
});

describe('the source types a turn searches', () => {
  it('is the persona\'s, narrowed by the request\'s filter, and never wider than the persona\'s', () => {
    expect(turnSourceTypes(null, undefined)).toBeUndefined();
    expect(turnSourceTypes(null, ['web'])).toEqual(['web']);
    expect(turnSourceTypes(['web'], undefined)).toEqual(['web']);
    expect(turnSourceTypes(['web', 'memory'], ['memory', 'file'])).toEqual(['memory']);
    expect(turnSourceTypes(['web'], ['memory'])).toEqual([]);
  });
});

describe('something to read', () => {
  it('is no white space, format character or blank-drawn letter or symbol, and any other character', () => {
    for (const blank of ['\u200b', '\u200e', '\u200f', '\u00ad', '\u2060', '\ufeff', '\u3164', '\u2800', '\u115f', '\uffa0', ' \t\u00a0\u3000']) {
      expect([JSON.stringify(blank), VISIBLE.test(blank)]).toEqual([JSON.stringify(blank), false]);
    }
    for (const text of ['a', '😀', '漢', '\u200ea', '.']) expect(VISIBLE.test(text)).toBe(true);
  });
});
