import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, type Identity } from '@lore/runtime';
import { TesseractOcr } from '@lore/extract/ocr';
import { startGraphTestStack, type GraphTestStack } from '../test-stack';
import { storedFileName } from './uploads';

/**
 * The uploads consumer on PGlite and the in-process bus, with an OCR worker that misbehaves on purpose: the
 * real `TesseractOcr` supervision around a worker script that crashes its thread or never answers. Each bad file
 * must end `failed` with a reason, and the upload queued behind it (same memory, same partition) must complete.
 */
const MISBEHAVING_OCR = `import { parentPort } from 'node:worker_threads';
parentPort.on('message', ({ id, image }) => {
  const text = Buffer.from(image).toString('latin1');
  if (text.includes('HANG')) return;
  if (text.includes('CRASH')) setTimeout(() => { throw new Error('native trouble at /opt/secret/path'); });
  else parentPort.postMessage({ id, ok: true, text: 'The Kestrel hangar opens at dawn.' });
});`;

describe('uploads whose extraction fails (PGlite)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lore-uploads-'));
  let stack: GraphTestStack;
  let ocr: TesseractOcr;
  const who: Identity = { tenant_id: 't_up', workspace_id: 'ws_up', memory_id: 'm_up', credential: 'ck_test', subject: 'key_up', role: 'admin' };

  beforeAll(async () => {
    const workerFile = join(dir, 'ocr.mjs');
    writeFileSync(workerFile, MISBEHAVING_OCR);
    ocr = new TesseractOcr({ timeoutMs: 1_000, workerFile, logger: createLogger({ level: 'silent', service: 'graph-uploads-ocr' }) });
    stack = await startGraphTestStack('uploads', { service: { ocr } });
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
    await ocr?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function upload(filename: string, type: string, data: Buffer): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([data], { type }), filename);
    const res = await fetch(`${stack.server.url}/api/v1/memory/uploads`, { method: 'POST', headers: await stack.identify(who), body: form });
    expect(res.status).toBe(202);
    return ((await res.json()) as { upload_id: string }).upload_id;
  }

  async function settled(uploadId: string): Promise<{ status: string; error: string | null; extractor: string | null }> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const res = await fetch(`${stack.server.url}/api/v1/memory/uploads/${uploadId}`, { headers: await stack.identify(who) });
      const body = (await res.json()) as { status: string; error: string | null; extractor: string | null };
      if (body.status === 'completed' || body.status === 'failed') return body;
      if (Date.now() > deadline) throw new Error(`upload ${uploadId} still ${body.status}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  const png = (marker: string) => Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from(marker, 'latin1')]);

  it('a crashed OCR thread, a hung one and an unreadable PDF fail their uploads with reasons; the uploads behind them complete', async () => {
    // Queued together, in this order, on one memory: the consumer handles them one after another.
    const crash = await upload('crash.png', 'image/png', png('CRASH'));
    const hang = await upload('hang.png', 'image/png', png('HANG'));
    const pdf = await upload('broken.pdf', 'application/pdf', Buffer.from('%PDF-1.7\nthis is no PDF at all'));
    const image = await upload('fine.png', 'image/png', png('FINE'));
    const text = await upload('notes.txt', 'text/plain', Buffer.from('The Heron depot stores spare turbine blades.'));

    expect(await settled(crash)).toMatchObject({ status: 'failed', error: 'the OCR engine stopped with an error' });
    expect(await settled(hang)).toMatchObject({ status: 'failed', error: 'the OCR engine took longer than 1000 ms' });
    expect(await settled(pdf)).toMatchObject({ status: 'failed', error: expect.stringMatching(/^unreadable PDF: /) });
    // The OCR worker was replaced after each failure: the next image is read.
    expect(await settled(image)).toMatchObject({ status: 'completed', extractor: 'ocr', error: null });
    expect(await settled(text)).toMatchObject({ status: 'completed', extractor: 'text', error: null });
  }, 60_000);
});

describe('the name an upload is kept under', () => {
  it('keeps the extension its reader is chosen by, through masking and cutting', () => {
    expect(storedFileName('plain.docx')).toBe('plain.docx');
    const masked = storedFileName('bob@acme.docx');
    expect(masked).toMatch(/\.docx$/);
    expect(masked).not.toContain('bob@acme');
    const long = storedFileName(`${'B'.repeat(300)}.html`);
    expect(long).toMatch(/\.html$/);
    expect(long.length).toBeLessThanOrEqual(200);
    expect(storedFileName('no extension at all')).toBe('no extension at all');
    expect(storedFileName('x'.repeat(300)).length).toBeLessThanOrEqual(200);
  });
});
