import { TOPICS } from '@lore/contracts';
import type { BusMessage, Subscription } from '@lore/runtime';
import { TesseractOcr } from '@lore/graph';
import { uniqueSuffix } from '../support/infra';
import { docx, renderPng, scannedPdf, textPdf } from './files';
import { eventually, startHarness, type Harness } from './support';

jest.setTimeout(300_000);

/** Clients upload through the real gateway (API keys, Redis) in front of the graph, as in production. */
describe('uploads through the gateway: every file type, OCR, limits', () => {
  let h: Harness;
  let ocr: TesseractOcr;
  let sub: Subscription;
  const events: any[] = [];
  const run = uniqueSuffix();
  const tenant = `t_up_${run}`;

  beforeAll(async () => {
    ocr = new TesseractOcr({ timeoutMs: 120_000 });
    h = await startHarness({ backend: 'postgres', via: 'gateway', graph: { ocr, config: { uploadMaxBytes: 2 * 1024 * 1024 } } });
    sub = await h.bus.subscribe({ groupId: `upload-events-${run}`, topics: [TOPICS.events], fromBeginning: true }, async (m: BusMessage) => {
      const envelope = JSON.parse(m.value.toString('utf8'));
      if (envelope.scope?.tenant_id === tenant) events.push(envelope);
    });
  });
  afterAll(async () => {
    await sub?.stop();
    await h?.close();
    await ocr?.close();
  });

  async function upload(who: any, filename: string, data: Buffer | string, type: string) {
    const form = new FormData();
    form.append('note', 'ignored field');
    form.append('file', new Blob([data], { type }), filename);
    const target = await h.authorize(who, '/api/v1/memory/uploads');
    const res = await fetch(target.url, { method: 'POST', headers: target.headers, body: form });
    return { status: res.status, body: (await res.json()) as any };
  }

  async function settled(who: any, uploadId: string) {
    return eventually(async () => {
      const r = await h.call('GET', `/api/v1/memory/uploads/${uploadId}`, who);
      return r.body.status === 'completed' || r.body.status === 'failed' ? r.body : undefined;
    }, 180_000, `upload ${uploadId}`);
  }

  const cases: Array<{ name: string; filename: string; type: string; make: () => Promise<Buffer | string>; query: string; expect: RegExp; extractor: string; ocr?: boolean }> = [
    { name: 'plain text', filename: 'notes.txt', type: 'text/plain', make: async () => 'The Heron depot stores spare turbine blades.', query: 'Heron depot turbine blades', expect: /turbine blades/, extractor: 'text' },
    { name: 'Markdown', filename: 'guide.md', type: 'text/markdown', make: async () => '# Ibis onboarding\n\nNew **Ibis** staff receive a badge on day one.', query: 'Ibis badge day one', expect: /badge/, extractor: 'markdown' },
    { name: 'HTML', filename: 'page.html', type: 'text/html', make: async () => '<html><head><title>Crane</title><script>var x=1</script></head><body><h1>Crane policy</h1><p>Crane visitors sign in at &quot;gate four&quot;.</p></body></html>', query: 'Crane visitors gate', expect: /gate four/, extractor: 'html' },
    { name: 'PDF with text', filename: 'report.pdf', type: 'application/pdf', make: () => textPdf(['The Egret pipeline moves 300 barrels per hour.', 'Egret maintenance is on Sundays.']), query: 'Egret pipeline barrels', expect: /300 barrels/, extractor: 'pdf' },
    { name: 'DOCX', filename: 'memo.docx', type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', make: () => docx(['The Stork office closes at six.', 'Stork parking is free.']), query: 'Stork office closes', expect: /closes at six/, extractor: 'docx' },
    { name: 'CSV', filename: 'staff.csv', type: 'text/csv', make: async () => 'name,team,city\n"Plover, Ann",Design,Lisbon\nBob Plover,Ops,Porto\n', query: 'Plover Design Lisbon', expect: /Lisbon/, extractor: 'csv' },
    { name: 'JSON', filename: 'config.json', type: 'application/json', make: async () => JSON.stringify({ swift: { region: 'eu-west', replicas: 5 } }), query: 'swift region replicas', expect: /eu-west/, extractor: 'json' },
    { name: 'image (OCR)', filename: 'scan.png', type: 'image/png', make: () => renderPng(['Quarterly revenue of Pelican', 'reached 42 million euros']), query: 'Pelican quarterly revenue', expect: /Pelican/i, extractor: 'ocr', ocr: true },
    { name: 'scanned PDF (OCR)', filename: 'scanned.pdf', type: 'application/pdf', make: async () => scannedPdf(await renderPng(['The Albatross warehouse', 'opens in Bergen'])), query: 'Albatross warehouse Bergen', expect: /Albatross/i, extractor: 'pdf+ocr', ocr: true },
  ];

  it.each(cases)('extracts, indexes and answers from $name', async (c) => {
    const who = h.identity(tenant);
    const accepted = await upload(who, c.filename, await c.make(), c.type);
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ status: 'pending', filename: c.filename });
    const done = await settled(who, accepted.body.upload_id);
    expect(done).toMatchObject({ status: 'completed', extractor: c.extractor, ocr: c.ocr === true });
    const doc = await h.call('GET', `/api/v1/memory/documents/${done.doc_id}`, who);
    expect(doc.body).toMatchObject({ status: 'indexed', source: 'upload', upload_id: accepted.body.upload_id });
    const s = await h.call('POST', '/api/v1/memory/search', who, { query: c.query });
    expect(s.body.citations.map((x: any) => x.document_id)).toContain(done.doc_id);
    expect(s.body.answer).toMatch(c.expect);
    // The upload ends with memory.ingest.completed on lore.events, naming the upload and its document.
    const completed = await eventually(
      async () => events.find((e) => e.event === 'memory.ingest.completed' && e.payload.upload_id === accepted.body.upload_id),
      60_000,
      'ingest.completed of the upload',
    );
    expect(completed.payload).toMatchObject({ upload_id: accepted.body.upload_id, doc_id: done.doc_id, vault_id: expect.any(String) });
    expect(completed.scope).toEqual(await h.scopeOf(who));
  });

  it('answers 413 above the configured size limit', async () => {
    // Declared far above the limit: refused from Content-Length before reading.
    const r = await upload(h.identity(tenant), 'big.txt', 'a'.repeat(2 * 1024 * 1024 + 100_000), 'text/plain');
    expect(r.status).toBe(413);
    // Just over: refused while the stream is read.
    const justOver = await upload(h.identity(tenant), 'big2.txt', 'b'.repeat(2 * 1024 * 1024 + 10), 'text/plain');
    expect(justOver.status).toBe(413);
    // The next upload is answered at once: an early 413 leaves no connection waiting on an unread body.
    const started = Date.now();
    const next = await upload(h.identity(tenant), 'small.txt', 'The Finch shed is blue.', 'text/plain');
    expect(next.status).toBe(202);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await settled(h.identity(tenant), next.body.upload_id)).status).toBe('completed');
  });

  it('fails an unreadable file with a reason, and masks secrets in uploads too', async () => {
    const who = h.identity(tenant);
    const bad = await upload(who, 'blob.bin', Buffer.from([0, 1, 2, 3, 0, 255, 254, 0]), 'application/octet-stream');
    expect(bad.status).toBe(202);
    const failed = await settled(who, bad.body.upload_id);
    expect(failed).toMatchObject({ status: 'failed', error: 'unsupported file type', doc_id: null });
    const secret = await upload(who, 'jane.doe@example.com notes.txt', 'Contact jane.doe@example.com or card 4111 1111 1111 1111 about the Kite order.', 'text/plain');
    const done = await settled(who, secret.body.upload_id);
    expect(done.filename).toBe('[REDACTED:email] notes.txt');
    const doc = await h.call('GET', `/api/v1/memory/documents/${done.doc_id}`, who);
    expect(doc.body.dlp_matches).toBe(2);
    // A text with NUL characters (which PostgreSQL text cannot hold), and a UTF-16 file, settle like any other: the
    // NULs are dropped, the UTF-16 is read by its byte order mark. Before, such an upload was retried until it was
    // dead-lettered, stayed `extracting`, held back the memory's uploads and kept its unmasked bytes.
    const nul = await upload(who, 'nul.txt', Buffer.from('Kestrel NUL\u0000 test for owner nul.owner@example.com'), 'text/plain');
    const utf16 = await upload(who, 'wide.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('The Merlin tower is grey.', 'utf16le')]), 'text/plain');
    for (const [accepted, text] of [[nul, /Kestrel NUL test for owner \[REDACTED:email\]/], [utf16, /The Merlin tower is grey\./]] as const) {
      const settledUpload = await settled(who, accepted.body.upload_id);
      expect(settledUpload.status).toBe('completed');
      const stored = await h.db.withTenant(tenant, (sql) => sql.query<{ content: string }>(`SELECT content FROM graph.documents WHERE tenant_id = $1 AND doc_id = $2`, [tenant, settledUpload.doc_id]));
      expect(stored.rows[0]?.content).toMatch(text);
    }
    // The original bytes (with the unmasked values) are gone once the upload settled.
    const blobs = await h.db.withTenant(tenant, (sql) => sql.query(`SELECT key FROM runtime.blobs WHERE tenant_id = $1`, [tenant]));
    expect(blobs.rows).toEqual([]);
  });

  it('keeps the first 500,000 characters of a longer file, masked before the cut', async () => {
    const who = h.identity(tenant);
    const filler = 'The Linnet archive holds weekly notes. ';
    // A card number across the 500,000-character cut: cutting before masking would keep "4111 1111" in clear.
    const head = filler.repeat(Math.ceil(499_990 / filler.length)).slice(0, 499_990);
    const up = await upload(who, 'long.txt', `${head} 4111 1111 1111 1111 closes the archive.`, 'text/plain');
    expect(up.status).toBe(202);
    const done = await settled(who, up.body.upload_id);
    expect(done.status).toBe('completed');
    const rows = await h.db.withTenant(tenant, (sql) => sql.query<{ content: string }>(`SELECT content FROM graph.documents WHERE doc_id = $1`, [done.doc_id]));
    const content = rows.rows[0]!.content;
    expect(content.length).toBeLessThanOrEqual(500_000);
    expect(content.startsWith('The Linnet archive')).toBe(true);
    expect(content).not.toMatch(/4111/);
  });

  it('rejects requests without a file, and hides uploads of other tenants', async () => {
    const who = h.identity(tenant);
    const form = new FormData();
    form.append('note', 'no file here');
    const target = await h.authorize(who, '/api/v1/memory/uploads');
    const res = await fetch(target.url, { method: 'POST', headers: target.headers, body: form });
    expect(res.status).toBe(400);
    const json = await fetch(target.url, {
      method: 'POST',
      headers: { ...target.headers, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(415);
    const mine = await upload(who, 'x.txt', 'The Wren file.', 'text/plain');
    const other = h.identity(`t_other_${run}`);
    expect((await h.call('GET', `/api/v1/memory/uploads/${mine.body.upload_id}`, other)).status).toBe(404);
    await settled(who, mine.body.upload_id);
  });
});
