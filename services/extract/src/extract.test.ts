import { once } from 'node:events';
import { createDeflate, createDeflateRaw } from 'node:zlib';
import { detectKind, extractDocument, pixelsToPng } from './index';
import { pdfOfObjects, pdfWithText } from './scan-pdf';
import { cleanMarkdown, csvToText, jsonToText, parseCsv } from './tabular';

describe('Markdown cleaning', () => {
  it('keeps link and image text, drops inline tags, fences and emphasis marks', () => {
    expect(cleanMarkdown('---\ntitle: x\n---\n# Guide\n\n![Logo](a.png) see [the docs](https://x.io) and [![badge](b.svg)](c)')).toBe('# Guide\n\nLogo see the docs and badge');
    expect(cleanMarkdown('a <b>bold</b> <> [](empty) [open](never closed\n```ts\n**x** __y__')).toBe('a bold <> [](empty) [open](never closed\n\nx y');
  });

  it('reads megabytes of unclosed brackets and tags in linear time', () => {
    // The former expressions took 10 s for 100 KB of `![` or `<`; the bound below is far above what these need.
    const started = Date.now();
    for (const unit of ['![', '[a', '<', '[a](', '](']) expect(typeof cleanMarkdown(unit.repeat(Math.ceil(2_000_000 / unit.length)))).toBe('string');
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});

describe('tables', () => {
  it('parses quoted CSV fields and sniffs the delimiter', () => {
    expect(parseCsv('a;b\n"x;1";"say ""hi"""\n')).toEqual([
      ['a', 'b'],
      ['x;1', 'say "hi"'],
    ]);
  });
  it('writes one self-contained line per record', () => {
    expect(csvToText('name,city\nAnn,Lisbon\nBob,\n')).toBe('name: Ann; city: Lisbon.\nname: Bob.');
  });
  it('flattens JSON to paths', () => {
    expect(jsonToText('{"a":{"b":[1,{"c":"x"}]},"d":null}')).toBe('a.b[0]: 1.\na.b[1].c: x.');
  });
});

describe('file kinds', () => {
  it('trusts magic bytes over names and types', () => {
    expect(detectKind('x.txt', 'text/plain', Buffer.from('%PDF-1.7 ...'))).toBe('pdf');
    expect(detectKind('x.bin', '', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0]))).toBe('image');
    expect(detectKind('notes.md', '', Buffer.from('# hi'))).toBe('markdown');
    expect(detectKind('unknown', 'application/octet-stream', Buffer.from([0, 1, 2]))).toBeNull();
    expect(detectKind('archive.zip', 'application/zip', Buffer.from([0x50, 0x4b, 3, 4]))).toBeNull();
  });
  it('reads a UTF-16 text file by its byte order mark, and keeps no NUL character in any extracted text', async () => {
    const opts = { ocr: null, pdfTimeoutMs: 5_000, maxPdfPages: 10, ocrBelowChars: 0, maxOcrImages: 0 };
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Kestrel owns the lamp.', 'utf16le')]);
    const be = Buffer.from([0xfe, 0xff, ...Buffer.from('Heron', 'utf16le').swap16()]);
    expect(detectKind('notes', '', le)).toBe('text');
    expect((await extractDocument('text', le, opts)).text).toBe('Kestrel owns the lamp.');
    expect((await extractDocument('text', be, opts)).text).toBe('Heron');
    expect((await extractDocument('text', Buffer.from('Kestrel NUL\u0000 test'), opts)).text).toBe('Kestrel NUL test');
    expect((await extractDocument('json', Buffer.from('{"a":"Kestrel json\\u0000nul"}'), opts)).text).not.toContain('\u0000');
  });

  it('encodes raw grey pixels as a PNG', () => {
    const png = pixelsToPng({ width: 2, height: 1, channels: 1, data: new Uint8Array([0, 255]) });
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
  });
});

describe('test PDFs', () => {
  it('pdfWithText makes a PDF whose text layer the extractor reads', async () => {
    const pdf = pdfWithText(['The Kestrel hangar opens at dawn.', 'Bring (your) badge\\pass.']);
    expect(detectKind('x.bin', '', pdf)).toBe('pdf');
    const out = await extractDocument('pdf', pdf, { ocr: null, pdfTimeoutMs: 30_000, maxPdfPages: 10, ocrBelowChars: 20, maxOcrImages: 0 });
    expect(out.text).toContain('The Kestrel hangar opens at dawn.');
    expect(out.text).toContain('Bring (your) badge\\pass.');
    expect(out.extractor).toBe('pdf');
  });
});

describe('decompression bombs', () => {
  jest.setTimeout(60_000);

  /** `bytes` of spaces, deflated as they stream in (nothing of that size is ever held). */
  async function deflatedSpaces(bytes: number, raw: boolean): Promise<Buffer> {
    const z = raw ? createDeflateRaw({ level: 9 }) : createDeflate({ level: 9 });
    const out: Buffer[] = [];
    z.on('data', (c: Buffer) => out.push(c));
    const chunk = Buffer.alloc(1 << 20, 0x20);
    for (let written = 0; written < bytes; written += chunk.length) if (!z.write(chunk)) await once(z, 'drain');
    z.end();
    await once(z, 'end');
    return Buffer.concat(out);
  }

  /** A ZIP of one deflated entry, as a DOCX's document.xml would be. */
  function zipOf(name: string, deflated: Buffer, size: number): Buffer {
    const n = Buffer.from(name, 'latin1');
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(deflated.length, 18);
    local.writeUInt32LE(size >>> 0, 22);
    local.writeUInt16LE(n.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(deflated.length, 20);
    central.writeUInt32LE(size >>> 0, 24);
    central.writeUInt16LE(n.length, 28);
    const eocd = Buffer.alloc(22);
    eocd.writeUInt32LE(0x06054b50, 0);
    eocd.writeUInt16LE(1, 8);
    eocd.writeUInt16LE(1, 10);
    eocd.writeUInt32LE(46 + n.length, 12);
    eocd.writeUInt32LE(30 + n.length + deflated.length, 16);
    return Buffer.concat([local, n, deflated, central, n, eocd]);
  }

  const options = { ocr: null, pdfTimeoutMs: 60_000, maxPdfPages: 10, ocrBelowChars: 20, maxOcrImages: 0 };

  it('refuses a DOCX whose document expands past the bound, before the reader inflates it', async () => {
    const size = 300 * 1024 * 1024;
    const docx = zipOf('word/document.xml', await deflatedSpaces(size, true), size);
    expect(docx.length).toBeLessThan(1024 * 1024);
    await expect(extractDocument('docx', docx, options)).rejects.toThrow(/the DOCX document expands to more than 256 MiB when decompressed/);
  });

  it('refuses a PDF whose content stream expands past the bound; an ordinary PDF is read', async () => {
    const size = 300 * 1024 * 1024;
    const stream = await deflatedSpaces(size, false);
    const pdf = Buffer.concat([
      Buffer.from(`%PDF-1.7\n4 0 obj\n<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`, 'latin1'),
      stream,
      Buffer.from('\nendstream\nendobj\n%%EOF\n', 'latin1'),
    ]);
    await expect(extractDocument('pdf', pdf, options)).rejects.toThrow(/the PDF expands to more than 256 MiB when decompressed/);
    const ordinary = pdfWithText(['An ordinary page.']);
    expect((await extractDocument('pdf', ordinary, options)).text).toContain('An ordinary page.');
  });
});

describe('PDF page limit', () => {
  jest.setTimeout(60_000);

  /** A PDF of `count` pages that all show one content stream. */
  function pdfOfPages(count: number, line: string): Buffer {
    const content = `BT /F1 14 Tf 16 TL 50 740 Td (${line}) ' ET`;
    const objects = [
      '<< /Type /Catalog /Pages 2 0 R >>',
      `<< /Type /Pages /Kids [${Array.from({ length: count }, (_, i) => `${i + 5} 0 R`).join(' ')}] /Count ${count} >>`,
      '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
      `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
      ...Array.from({ length: count }, () => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>'),
    ];
    return pdfOfObjects(objects);
  }

  it('reads the first pages of a long PDF, only those', async () => {
    const pdf = pdfOfPages(5_000, 'Every page says this.');
    const out = await extractDocument('pdf', pdf, { ocr: null, pdfTimeoutMs: 60_000, maxPdfPages: 10, ocrBelowChars: 0, maxOcrImages: 0 });
    expect(out.text.split('Every page says this.').length - 1).toBe(10);
  });
});
