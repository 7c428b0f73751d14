import { cleanFileName, failureReason, queryTerms, selectPassages, splitPassages } from './project-files';

const at = new Date('2026-03-02T09:00:00Z');

describe('project file passages', () => {
  it('splits long text at paragraph, line or sentence ends near the size, keeping every word', () => {
    const text = ['First paragraph about the launch.', 'Second paragraph about the budget. It has two sentences.', 'Third.'].join('\n\n');
    const parts = splitPassages(text, 60);
    expect(parts).toEqual(['First paragraph about the launch.', 'Second paragraph about the budget. It has two sentences.', 'Third.']);
    expect(splitPassages('One sentence here, a longer one. Another follows it.', 40)).toEqual(['One sentence here, a longer one.', 'Another follows it.']);
    expect(parts.join(' ').split(/\s+/).sort()).toEqual(text.split(/\s+/).sort());
    expect(splitPassages('x'.repeat(130), 50)).toEqual(['x'.repeat(50), 'x'.repeat(50), 'x'.repeat(30)]);
    expect(splitPassages('  ', 50)).toEqual([]);
  });

  it('ranks passages by the question\'s words, ties in file order, and keeps the best few', () => {
    const files = [
      { file_id: 'a', name: 'a.txt', text: 'The hangar opens at dawn.\n\nNothing else here.', time_updated: at },
      { file_id: 'b', name: 'b.txt', text: 'Kestrel crews report to the hangar at dawn.', time_updated: at },
    ];
    const picked = selectPassages(files, 'When do Kestrel crews reach the hangar?', { passageChars: 30, maxPassages: 2 });
    expect(picked.map((p) => [p.fileId, p.index])).toEqual([
      ['b', 0],
      ['a', 0],
    ]);
    expect(picked[0]!.score).toBeGreaterThan(picked[1]!.score);
    expect(picked[0]).toMatchObject({ name: 'b.txt', updatedAt: at });
  });

  it('gives a small project\'s files whatever the question', () => {
    const files = [{ file_id: 'a', name: 'notes.md', text: 'Quarterly numbers.', time_updated: at }];
    expect(selectPassages(files, 'summarise it').map((p) => p.text)).toEqual(['Quarterly numbers.']);
  });

  it('reads words in any script and leaves out the ones that say nothing', () => {
    expect([...queryTerms('What is the Größe of the café? 42 ok')]).toEqual(['größe', 'café']);
  });
});

describe('project file names and failures', () => {
  it('keeps a file name printable and bounded', () => {
    expect(cleanFileName(' report\u0000.pdf ')).toBe('report.pdf');
    expect(cleanFileName('')).toBe('file');
    expect(cleanFileName(undefined)).toBe('file');
    expect(cleanFileName('a'.repeat(300))).toHaveLength(255);
  });

  it('words a failure for the person who uploaded the file', () => {
    expect(failureReason('unsupported_type', 'image/png (no OCR engine)')).toBe('this type of file cannot be read (image/png (no OCR engine))');
    expect(failureReason('empty', null)).toBe('no text could be extracted from the file');
    expect(failureReason('failed', 'the file is not valid JSON')).toBe('the file is not valid JSON');
    expect(failureReason('too_large', 'larger than 10 bytes')).toBe('the file is too large to read (larger than 10 bytes)');
  });
});
