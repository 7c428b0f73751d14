import { AUTOMATIC_NAME_MAX, automaticName, turnSourceTypes } from './chat-rules';

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
