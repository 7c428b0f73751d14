import { pdfWithText } from '@lore/extract/scan-pdf';
import { cutToBytes, DEFAULT_FILE_READING, readFileText } from './file-text';

describe('reading a file to text', () => {
  it('cuts UTF-8 text at a byte limit without splitting a character', () => {
    expect(cutToBytes('abc', 10)).toBe('abc');
    expect(cutToBytes('café', 4)).toBe('caf');
    expect(cutToBytes('café', 5)).toBe('café');
    expect(cutToBytes('a😀b', 3)).toBe('a');
  });

  it('cuts the text of a file that cannot be cut (a PDF) after extracting it, and says so', async () => {
    const pdf = pdfWithText(['The first line of a long report.', 'The second line of it.']);
    const read = await readFileText({ name: 'r.pdf', contentType: 'application/pdf', charset: null, data: pdf }, 20, DEFAULT_FILE_READING);
    expect(read).toEqual({ ok: true, kind: 'pdf', text: 'The first line of a ', title: null, extractor: 'pdf', truncated: true });
  });

  it('refuses a download that was cut when the file must be read whole', async () => {
    const pdf = pdfWithText(['x']);
    expect(await readFileText({ name: 'r.pdf', contentType: 'application/pdf', charset: null, data: pdf, cut: true }, 1000, DEFAULT_FILE_READING)).toMatchObject({ ok: false, reason: 'too_large' });
  });

  it('says a file without text is empty', async () => {
    expect(await readFileText({ name: 'blank.txt', contentType: 'text/plain', charset: null, data: Buffer.from(' \n ') }, 1000, DEFAULT_FILE_READING)).toEqual({ ok: false, reason: 'empty', detail: null });
  });
});
