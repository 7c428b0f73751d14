import { createHash } from 'node:crypto';
import type { BlobInfo, BlobStore } from '@lore/runtime';
import { FileSource } from './file';
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

async function fixture() {
  const blobs = new MemoryBlobs();
  await blobs.put(TENANT, `${TENANT}/uploads/guide.html`, Buffer.from('<html><head><title>The guide</title></head><body><h1>Setup</h1><p>Run it.</p></body></html>'), 'text/html; charset=utf-8');
  await blobs.put(TENANT, `${TENANT}/uploads/notes.txt`, Buffer.from('Release notes\n\nVersion two.'), 'text/plain');
  await blobs.put(TENANT, `${TENANT}/uploads/readme.md`, Buffer.from('# Readme\n\nHello.'), 'text/markdown');
  await blobs.put(TENANT, `${TENANT}/uploads/report.pdf`, Buffer.from('%PDF-1.4'), 'application/pdf');
  await blobs.put('t-other', `${TENANT}/uploads/secret.txt`, Buffer.from('not yours'), 'text/plain');
  const locations = ['guide.html', 'notes.txt', 'readme.md', 'report.pdf', 'missing.txt', 'secret.txt'].map((n) => `${TENANT}/uploads/${n}`);
  return { blobs, source: new FileSource({ file_locations: locations }, { blobs, tenantId: TENANT }) };
}

describe('the file source', () => {
  it('reads HTML, plain text and Markdown files of its tenant; skips PDFs and missing files', async () => {
    const { source } = await fixture();
    const { docs, skipped, outcome } = await collect(source.loadAll({ signal: signal() }));
    expect(docs.map((d) => [d.document.id, d.document.title, d.document.text])).toEqual([
      [`${TENANT}/uploads/guide.html`, 'The guide', '# Setup\n\nRun it.'],
      [`${TENANT}/uploads/notes.txt`, 'Release notes', 'Release notes\n\nVersion two.'],
      [`${TENANT}/uploads/readme.md`, 'readme.md', '# Readme\n\nHello.'],
    ]);
    expect(docs[0]!.document).toMatchObject({ source_type: 'file', updated_at: new Date('2026-03-02T09:00:00Z'), metadata: { content_type: 'text/html' } });
    expect(skipped.map((s) => [s.ref.split('/').pop(), s.reason])).toEqual([
      ['report.pdf', 'unsupported_type'],
      ['missing.txt', 'not_found'],
      ['secret.txt', 'not_found'],
    ]);
    expect(outcome).toMatchObject({ stop: 'completed', yielded: 3, skipped: 3 });
  });

  it('polls by content hash: nothing when nothing changed, the changed file otherwise', async () => {
    const { blobs, source } = await fixture();
    const load = await collect(source.loadAll({ signal: signal() }));
    const previous = new Map(load.docs.map((d) => [d.document.id, d.validators]));
    expect((await collect(source.pollSince(new Date(), previous, { signal: signal() }))).docs).toEqual([]);
    await blobs.put(TENANT, `${TENANT}/uploads/notes.txt`, Buffer.from('Release notes\n\nVersion three.'), 'text/plain');
    const after = await collect(source.pollSince(new Date(), previous, { signal: signal() }));
    expect(after.docs.map((d) => d.document.text)).toEqual(['Release notes\n\nVersion three.']);
    expect(after.outcome).toMatchObject({ stop: 'completed', unchanged: 2 });
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
