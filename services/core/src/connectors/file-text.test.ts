import { pdfWithText } from '@lore/extract/scan-pdf';
import type { OcrEngine } from '@lore/extract';
import { cutToBytes, DEFAULT_FILE_READING, fileKindOf, readFileText } from './file-text';

describe('reading a file to text', () => {
  it('tells what a file is read as from its first bytes, name and type, or why it cannot be read (what uploads are checked with)', () => {
    const head = (name: string, contentType: string | null, data: Buffer | string) => fileKindOf({ name, contentType, head: Buffer.from(data) }, DEFAULT_FILE_READING);
    expect(head('report', 'application/octet-stream', pdfWithText(['x']).subarray(0, 4096))).toEqual({ ok: true, kind: 'pdf' });
    expect(head('notes.md', 'application/octet-stream', '# Notes')).toEqual({ ok: true, kind: 'markdown' });
    expect(head('data', 'text/csv', 'a,b\n1,2')).toEqual({ ok: true, kind: 'csv' });
    expect(head('bundle.zip', 'application/zip', Buffer.from([0x50, 0x4b, 0x03, 0x04]))).toEqual({ ok: false, detail: 'application/zip' });
    expect(head('blob', null, Buffer.from([0, 1, 2, 0xff]))).toEqual({ ok: false, detail: 'no content type' });
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(head('scan.png', 'image/png', png)).toEqual({ ok: false, detail: 'image/png (no OCR engine)' });
    const ocr: OcrEngine = { recognize: async () => '' } as unknown as OcrEngine;
    expect(fileKindOf({ name: 'scan.png', contentType: 'image/png', head: png }, { ocr })).toEqual({ ok: true, kind: 'image' });
  });

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
