import { splitSentences } from './text';

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
});
