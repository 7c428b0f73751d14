import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import JSZip from 'jszip';
import { extractDocument, extractionFailureReason, pixelsToPng, UnsupportedFileError } from './index';
import { TesseractOcr } from './ocr';
import { parsePdf } from './pdf';
import { pdfWithImage } from './scan-pdf';
import { runWorkerOnce, WorkerChannel, WorkerFailure } from './worker-thread';

// Worker threads, a child process and a real OCR engine on a machine that may be busy.
jest.setTimeout(60_000);

const ROOT = join(__dirname, '..', '..', '..');

/** Small worker scripts, each misbehaving in one way. */
const SCRIPTS: Record<string, string> = {
  'report.mjs': `import { parentPort } from 'node:worker_threads';
parentPort.postMessage({ execArgv: process.execArgv, env: Object.keys(process.env) });`,
  'throws.mjs': `throw new Error('boom at /secret/path/file.ts');`,
  'exits.mjs': `process.exit(3);`,
  'silent.mjs': `setInterval(() => {}, 1000);`,
  'hog.mjs': `const keep = []; for (;;) keep.push(new Array(1e5).fill({ x: Math.random() }));`,
  'echo.mjs': `import { parentPort } from 'node:worker_threads';
parentPort.on('message', (m) => {
  if (m.crash) setTimeout(() => { throw new Error('crashed'); });
  else if (m.hang) return;
  else if (m.refuse) parentPort.postMessage({ id: m.id, ok: false, error: 'not an image' });
  else { console.error('noise on stderr'); parentPort.postMessage({ id: m.id, ok: true, value: m.value * 2 }); }
});`,
};

describe('worker threads of the extractors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lore-workers-'));
  const file = (name: string) => join(dir, name);
  beforeAll(() => {
    for (const [name, text] of Object.entries(SCRIPTS)) writeFileSync(file(name), text);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('start with no execArgv and an empty environment, whatever the parent preloads (npm start: tsx + telemetry .ts)', () => {
    // The parent is started the way `npm start` starts Lore; a worker that inherited its flags would fail to load
    // register.ts, and the default of an unhandled worker error is the end of the process.
    const probe = join(dir, 'probe.ts');
    writeFileSync(
      probe,
      `import { runWorkerOnce } from ${JSON.stringify(join(__dirname, 'worker-thread.ts'))};
runWorkerOnce(${JSON.stringify(file('report.mjs'))}, { what: 'probe', workerData: null, timeoutMs: 20000 })
  .then((m) => process.stdout.write(JSON.stringify(m)), (e) => { process.stdout.write('failed: ' + e.message); process.exitCode = 2; });`,
    );
    const r = spawnSync(
      process.execPath,
      ['--conditions=lore-src', '--import', 'tsx', '--import', join(ROOT, 'services/runtime/src/telemetry/register.ts'), probe],
      { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '--enable-source-maps', LORE_DATABASE_URL: 'postgres://secret' } },
    );
    expect({ code: r.status, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(r.stdout)).toEqual({ execArgv: [], env: [] });
  });

  it('reject a thread that throws, with the step named and no path or message of the library', async () => {
    const err = await runWorkerOnce(file('throws.mjs'), { what: 'the PDF parser', workerData: null, timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkerFailure);
    expect((err as Error).message).toBe('the PDF parser stopped with an error');
    expect(((err as Error).cause as Error).message).toContain('boom');
  });

  it('reject a thread that exits, one that never answers, and one that runs out of memory', async () => {
    await expect(runWorkerOnce(file('exits.mjs'), { what: 'the PDF parser', workerData: null, timeoutMs: 10_000 })).rejects.toThrow(
      'the PDF parser exited unexpectedly (code 3)',
    );
    await expect(runWorkerOnce(file('silent.mjs'), { what: 'the PDF parser', workerData: null, timeoutMs: 300 })).rejects.toThrow(
      'the PDF parser took longer than 300 ms',
    );
    await expect(
      runWorkerOnce(file('hog.mjs'), { what: 'the PDF parser', workerData: null, timeoutMs: 30_000, resourceLimits: { maxOldGenerationSizeMb: 16 } }),
    ).rejects.toThrow('the PDF parser ran out of memory');
  });

  it('reject a worker file that does not exist instead of throwing from an event', async () => {
    await expect(runWorkerOnce(file('missing.mjs'), { what: 'the PDF parser', workerData: null, timeoutMs: 10_000 })).rejects.toBeInstanceOf(WorkerFailure);
  });

  it('a long-lived worker answers, refuses, and after a crash or a timeout fails only the requests in flight, then starts afresh', async () => {
    const logged: unknown[] = [];
    const logger = { debug: (o: unknown) => logged.push(o), warn: (o: unknown) => logged.push(o) } as never;
    const channel = new WorkerChannel({ file: file('echo.mjs'), what: 'the OCR engine', logger });
    try {
      await expect(channel.request<{ value: number }>({ value: 21 }, [], 10_000)).resolves.toMatchObject({ value: 42 });
      await expect(channel.request({ refuse: true }, [], 10_000)).rejects.toThrow('the OCR engine could not read the file: not an image');

      const crash = channel.request({ crash: true }, [], 10_000);
      await expect(crash).rejects.toThrow('the OCR engine stopped with an error');
      expect(channel.running).toBe(false);
      await expect(channel.request<{ value: number }>({ value: 5 }, [], 10_000)).resolves.toMatchObject({ value: 10 });

      await expect(channel.request({ hang: true }, [], 200)).rejects.toThrow('the OCR engine took longer than 200 ms');
      expect(channel.running).toBe(false);
      await expect(channel.request<{ value: number }>({ value: 1 }, [], 10_000)).resolves.toMatchObject({ value: 2 });
      // The thread's console output reached the logger, not the process's stderr.
      expect(logged).toContainEqual(expect.objectContaining({ worker: 'the OCR engine', output: expect.stringContaining('noise on stderr') }));
    } finally {
      await channel.close();
    }
  });

  it('a long-lived worker whose file cannot start rejects each request', async () => {
    const channel = new WorkerChannel({ file: file('throws.mjs'), what: 'the OCR engine' });
    await expect(channel.request({}, [], 10_000)).rejects.toThrow('the OCR engine stopped with an error');
    await expect(channel.request({}, [], 10_000)).rejects.toThrow('the OCR engine stopped with an error');
  });
});

describe('the real extractors on broken files', () => {
  it('OCR rejects a truncated PNG with a reason and then reads the next image on a fresh engine', async () => {
    const ocr = new TesseractOcr({ timeoutMs: 60_000 });
    try {
      const truncated = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
      await expect(ocr.recognize(truncated)).rejects.toThrow(/^the OCR engine could not read the file: .*image/);
      // A white 64×32 page: readable, no text.
      const blank = pixelsToPng({ width: 64, height: 32, channels: 1, data: new Uint8Array(64 * 32).fill(255) });
      await expect(ocr.recognize(blank)).resolves.toEqual(expect.any(String));
    } finally {
      await ocr.close();
    }
  });

  it('the PDF parser rejects garbage and a truncated document with a reason', async () => {
    const options = { timeoutMs: 30_000, maxPages: 10, ocrBelowChars: 20 };
    await expect(parsePdf(Buffer.from('%PDF-1.7\nnot really a pdf'), options)).rejects.toThrow(/^unreadable PDF: /);
    await expect(parsePdf(Buffer.from('%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R'), options)).rejects.toThrow(/^unreadable PDF: /);
  });

  it('the PDF parser drops a page image above the OCR limit before decoding it, and keeps a normal scan', async () => {
    const options = { timeoutMs: 30_000, maxPages: 10, ocrBelowChars: 20 };
    const small = await parsePdf(pdfWithImage(120, 80), options);
    expect(small.images.map((i) => [i.width, i.height])).toEqual([[120, 80]]);
    // 7000×7000 = 49 million pixels: PDF.js would decode them outside the worker's heap ceiling.
    const huge = await parsePdf(pdfWithImage(7000, 7000), options);
    expect(huge.images).toEqual([]);
  });

  it('the DOCX reader (in its own thread) refuses a broken package and reads a good one', async () => {
    const options = { ocr: null, pdfTimeoutMs: 30_000, maxPdfPages: 10, ocrBelowChars: 20, maxOcrImages: 1 };
    await expect(extractDocument('docx', Buffer.from('PK\u0003\u0004 not a zip at all'), options)).rejects.toThrow('the file is not a readable DOCX document');
    const zip = new JSZip();
    zip.file('[Content_Types].xml', '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>');
    zip.file('_rels/.rels', '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>');
    zip.file('word/document.xml', '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>The Stork office closes at six.</w:t></w:r></w:p></w:body></w:document>');
    const good = await zip.generateAsync({ type: 'nodebuffer' });
    await expect(extractDocument('docx', good, options)).resolves.toMatchObject({ text: expect.stringContaining('The Stork office closes at six.'), extractor: 'docx' });
  });

  it('words every failure for the upload: our own messages as they are, anything else generically', () => {
    expect(extractionFailureReason('pdf', new UnsupportedFileError('unreadable PDF: Invalid PDF structure.'))).toBe('unreadable PDF: Invalid PDF structure.');
    expect(extractionFailureReason('image', new WorkerFailure('the OCR engine ran out of memory'))).toBe('the OCR engine ran out of memory');
    expect(extractionFailureReason('docx', new TypeError('Cannot read properties of undefined (reading "x") at /app/node_modules/y.js'))).toBe(
      'the file could not be read as a DOCX document',
    );
    expect(extractionFailureReason(null, new Error('x'))).toBe('the file could not be read');
  });
});
