import { cutUnits, splitSentences, truncate } from './text';

describe('splitSentences', () => {
  it('keeps a Markdown heading a sentence of its own, and reads a wrapped line as a space', () => {
    expect(splitSentences('# Fog horn\nThe keepers log the horn at nine. They\nlog it daily.\n\n## Lamp\r\nIt was electrified in 1961.')).toEqual([
      '# Fog horn',
      'The keepers log the horn at nine.',
      'They log it daily.',
      '## Lamp',
      'It was electrified in 1961.',
    ]);
  });

  it('splits list items and paragraphs, and keeps abbreviations and citation markers with their sentence', () => {
    expect(splitSentences('Intro by Dr. Lee. Revenue grew. [2] Next\n- one item\n- two items')).toEqual(['Intro by Dr. Lee.', 'Revenue grew. [2]', 'Next', '- one item', '- two items']);
  });

  it('splits long runs of stops that end no sentence in linear time (a document of them once held an ingest for minutes)', () => {
    // Before, each stop re-read the text since the last sentence: 40,000 of these took 20-40 s; now milliseconds.
    // The test's own time-out (5 s) is the bound: it fails only when the work grows with the square of the text.
    for (const unit of ['heron. ', 'e.g. ', 'heron ', '# heron\n']) {
      const out = splitSentences(unit.repeat(200_000));
      expect(out.length).toBeGreaterThan(0);
    }
  });
});

describe('cutting text between code points', () => {
  it('never leaves half of a surrogate pair at the cut', () => {
    const text = `y${'😀'.repeat(10)}`;
    // Unit 4 is the second emoji's first half: the cut goes before it.
    expect(cutUnits(text, 4)).toBe('y😀');
    expect(cutUnits(text, 5)).toBe('y😀😀');
    expect(cutUnits(text, 100)).toBe(text);
    expect(cutUnits('😀', 1)).toBe('');
    expect(truncate(`y${'😀'.repeat(400)}`, 280)).toBe(`y${'😀'.repeat(139)}…`);
  });
});
