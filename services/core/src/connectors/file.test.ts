import { createHash } from 'node:crypto';
import { pdfWithText } from '@lore/extract/scan-pdf';
import type { BlobInfo, BlobStore } from '@lore/runtime';
import JSZip from 'jszip';
import { FileSource } from './file';
import { DEFAULT_FILE_READING } from './file-text';
import { consume, type RunOutcome, type SourceItem } from './source';

const TENANT = 't-files';

/** Blobs in memory, per tenant; `failing` makes every read throw (the store is down); `delayMs` slows reads. */
class MemoryBlobs implements BlobStore {
  readonly kind = 'memory' as const;
  readonly blobs = new Map<string, { info: BlobInfo; data: Buffer }>();
  failing = false;
  delayMs = 0;
  reads = 0;

  async put(tenantId: string, key: string, data: Buffer, contentType: string): Promise<BlobInfo> {
    const info = { key, size: data.length, contentType, sha256: createHash('sha256').update(data).digest('hex'), createdAt: new Date('2026-03-02T09:00:00Z') };
    this.blobs.set(`${tenantId}\n${key}`, { info, data });
    return info;
  }

  async get(tenantId: string, key: string): Promise<{ info: BlobInfo; data: Buffer } | null> {
    this.reads += 1;
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.failing) throw new Error('connection refused');
    return this.blobs.get(`${tenantId}\n${key}`) ?? null;
  }

  async stat(tenantId: string, keys: readonly string[]): Promise<BlobInfo[]> {
    return [...new Set(keys)].flatMap((k) => {
      const blob = this.blobs.get(`${tenantId}\n${k}`);
      return blob ? [blob.info] : [];
    });
  }

  async delete(tenantId: string, key: string): Promise<void> {
    this.blobs.delete(`${tenantId}\n${key}`);
  }
}

async function collect(run: AsyncGenerator<SourceItem, RunOutcome, undefined>) {
  const items: SourceItem[] = [];
  const outcome = await consume(run, (item) => void items.push(item));
  return { docs: items.flatMap((i) => (i.kind === 'document' ? [i] : [])), skipped: items.flatMap((i) => (i.kind === 'skipped' ? [i] : [])), outcome };
}

const signal = () => new AbortController().signal;

/** The smallest DOCX the extractor (mammoth) reads: content types, the package relationship, one document part. */
async function docx(paragraphs: string[]): Promise<Buffer> {
  const zip = new JSZip();
  zip.file(
    '[Content_Types].xml',
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>' +
      '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
  );
  zip.file(
    '_rels/.rels',
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
      '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
  );
  const body = paragraphs.map((p) => `<w:p><w:r><w:t xml:space="preserve">${p}</w:t></w:r></w:p>`).join('');
  zip.file('word/document.xml', `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`);
  return zip.generateAsync({ type: 'nodebuffer' });
}

const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const PNG_BYTES = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);

async function fixture() {
  const blobs = new MemoryBlobs();
  await blobs.put(TENANT, `${TENANT}/uploads/guide.html`, Buffer.from('<html><head><title>The guide</title></head><body><h1>Setup</h1><p>Run it.</p></body></html>'), 'text/html; charset=utf-8');
  await blobs.put(TENANT, `${TENANT}/uploads/notes.txt`, Buffer.from('Release notes\n\nVersion two.'), 'text/plain');
  await blobs.put(TENANT, `${TENANT}/uploads/readme.md`, Buffer.from('# Readme\n\nHello.'), 'text/markdown');
  await blobs.put(TENANT, `${TENANT}/uploads/report.pdf`, pdfWithText(['Quarterly report', 'Revenue grew in the north.']), 'application/pdf');
  await blobs.put('t-other', `${TENANT}/uploads/secret.txt`, Buffer.from('not yours'), 'text/plain');
  const locations = ['guide.html', 'notes.txt', 'readme.md', 'report.pdf', 'missing.txt', 'secret.txt'].map((n) => `${TENANT}/uploads/${n}`);
  return { blobs, source: new FileSource({ file_locations: locations }, { blobs, tenantId: TENANT }) };
}

describe('the file source', () => {
  it('reads HTML, plain text, Markdown and PDF files of its tenant; skips missing files', async () => {
    const { source } = await fixture();
    const { docs, skipped, outcome } = await collect(source.loadAll({ signal: signal() }));
    expect(docs.map((d) => [d.document.id, d.document.title, d.document.text])).toEqual([
      [`${TENANT}/uploads/guide.html`, 'The guide', '# Setup\n\nRun it.'],
      [`${TENANT}/uploads/notes.txt`, 'Release notes', 'Release notes\n\nVersion two.'],
      [`${TENANT}/uploads/readme.md`, 'readme.md', '# Readme\n\nHello.'],
      [`${TENANT}/uploads/report.pdf`, 'report.pdf', expect.stringMatching(/Quarterly report\s+Revenue grew in the north\./)],
    ]);
    expect(docs[0]!.document).toMatchObject({ source_type: 'file', updated_at: new Date('2026-03-02T09:00:00Z'), metadata: { content_type: 'text/html', extractor: 'html' } });
    expect(docs[3]!.document.metadata).toMatchObject({ content_type: 'application/pdf', extractor: 'pdf' });
    expect(skipped.map((s) => [s.ref.split('/').pop(), s.reason])).toEqual([
      ['missing.txt', 'not_found'],
      ['secret.txt', 'not_found'],
    ]);
    expect(outcome).toMatchObject({ stop: 'completed', yielded: 4, skipped: 2 });
  });

  it('reads every type memory uploads read with the one extractor; images need an OCR engine; a damaged or oversized file is skipped with its reason', async () => {
    const blobs = new MemoryBlobs();
    const at = (name: string) => `${TENANT}/files/${name}`;
    await blobs.put(TENANT, at('minutes.docx'), await docx(['Minutes of the board', 'The budget was approved.']), DOCX_TYPE);
    await blobs.put(TENANT, at('prices.csv'), Buffer.from('item,price\nlamp,12\n'), 'text/csv');
    await blobs.put(TENANT, at('config.json'), Buffer.from('{"region":"eu","replicas":3}'), 'application/json');
    await blobs.put(TENANT, at('latin1.txt'), Buffer.from('caf\xe9 cr\xe8me', 'latin1'), 'text/plain; charset=iso-8859-1');
    await blobs.put(TENANT, at('logo.png'), PNG_BYTES, 'image/png');
    await blobs.put(TENANT, at('broken.pdf'), Buffer.from('%PDF-1.4 this is not a PDF'), 'application/pdf');
    await blobs.put(TENANT, at('big.pdf'), pdfWithText(Array.from({ length: 200 }, (_, i) => `line ${i} `.padEnd(80, 'x'))), 'application/pdf');
    await blobs.put(TENANT, at('archive.zip'), Buffer.from([0x50, 0x4b, 3, 4, 0, 0]), 'application/zip');
    const names = ['minutes.docx', 'prices.csv', 'config.json', 'latin1.txt', 'logo.png', 'broken.pdf', 'big.pdf', 'archive.zip'];
    const maxFileBytes = 10_000;
    const source = new FileSource({ file_locations: names.map(at) }, { blobs, tenantId: TENANT, reading: { ...DEFAULT_FILE_READING, maxFileBytes } });
    const { docs, skipped } = await collect(source.loadAll({ signal: signal() }));
    expect(docs.map((d) => [d.document.id.split('/').pop(), d.document.text, d.document.metadata.extractor])).toEqual([
      ['minutes.docx', 'Minutes of the board\n\nThe budget was approved.', 'docx'],
      ['prices.csv', 'item: lamp; price: 12.', 'csv'],
      ['config.json', 'region: eu.\nreplicas: 3.', 'json'],
      ['latin1.txt', 'café crème', 'text'],
    ]);
    expect(skipped.map((s) => [s.ref.split('/').pop(), s.reason, s.detail])).toEqual([
      ['logo.png', 'unsupported_type', 'image/png (no OCR engine)'],
      ['broken.pdf', 'failed', expect.stringContaining('PDF')],
      ['big.pdf', 'too_large', `larger than ${maxFileBytes} bytes`],
      ['archive.zip', 'unsupported_type', 'application/zip'],
    ]);
  });

  it('reads images with the OCR engine it is given', async () => {
    const blobs = new MemoryBlobs();
    await blobs.put(TENANT, `${TENANT}/files/scan.png`, PNG_BYTES, 'image/png');
    const ocr = { kind: 'test', recognize: async () => 'Text seen in the image.', close: async () => undefined };
    const source = new FileSource({ file_locations: [`${TENANT}/files/scan.png`] }, { blobs, tenantId: TENANT, reading: { ...DEFAULT_FILE_READING, ocr } });
    const { docs } = await collect(source.loadAll({ signal: signal() }));
    expect(docs.map((d) => [d.document.text, d.document.metadata.extractor])).toEqual([['Text seen in the image.', 'ocr']]);
  });

  it('polls by content hash: nothing when nothing changed, the changed file otherwise', async () => {
    const { blobs, source } = await fixture();
    const load = await collect(source.loadAll({ signal: signal() }));
    const previous = new Map(load.docs.map((d) => [d.document.id, d.validators]));
    expect((await collect(source.pollSince(new Date(), previous, { signal: signal() }))).docs).toEqual([]);
    await blobs.put(TENANT, `${TENANT}/uploads/notes.txt`, Buffer.from('Release notes\n\nVersion three.'), 'text/plain');
    const after = await collect(source.pollSince(new Date(), previous, { signal: signal() }));
    expect(after.docs.map((d) => d.document.text)).toEqual(['Release notes\n\nVersion three.']);
    expect(after.outcome).toMatchObject({ stop: 'completed', unchanged: 3 });
  });

  it('lists the locations that exist; a store that cannot be read fails the listing instead of emptying it', async () => {
    const { blobs, source } = await fixture();
    const listed: string[] = [];
    const outcome = await consume(source.listIds({ signal: signal() }), (id) => void listed.push(id));
    expect(outcome.stop).toBe('completed');
    expect(listed.map((l) => l.split('/').pop())).toEqual(['guide.html', 'notes.txt', 'readme.md', 'report.pdf']);
    blobs.failing = true;
    const failed = await consume(source.listIds({ signal: signal() }), () => undefined);
    expect(failed).toMatchObject({ stop: 'failed', yielded: 0 });
  });

  it('stops at the document, byte and time limits and at the signal', async () => {
    const { blobs, source } = await fixture();
    expect((await collect(source.loadAll({ signal: signal(), limits: { maxDocuments: 2 } }))).outcome).toMatchObject({ stop: 'max_documents', yielded: 2 });
    const cut = await collect(source.loadAll({ signal: signal(), limits: { maxDocumentBytes: 10 } }));
    expect(cut.docs[1]).toMatchObject({ truncated: true, document: { text: 'Release no', metadata: { truncated: 'true' } } });
    blobs.delayMs = 200;
    const slow = await collect(source.loadAll({ signal: signal(), limits: { maxTotalMs: 300 } }));
    expect(slow.outcome.stop).toBe('max_time');
    expect(slow.outcome.elapsedMs).toBeLessThan(1000);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    expect((await collect(source.loadAll({ signal: controller.signal }))).outcome.stop).toBe('aborted');
  });

  it('refuses a configuration the connector rules refuse', () => {
    expect(() => new FileSource({ file_locations: [] }, { blobs: new MemoryBlobs(), tenantId: TENANT })).toThrow(/file_locations/);
  });
});
