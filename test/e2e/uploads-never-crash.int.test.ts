import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IDENTITY_HEADER, IdentitySigner, type Identity } from '@lore/runtime';
import { runtimeStageEnv } from '../support/dockerfile';
import { freshDatabase, requireEnv, uniqueSuffix, type TestDatabase } from '../support/infra';
import { docx, renderPng, scannedPdf, textPdf } from '../memory/files';
import {
  buildService,
  docxBomb,
  docxWithoutDocument,
  freePort,
  multipart,
  noise,
  pdfWithImage,
  pngClaimingHugeSize,
  rawRequest,
  startProcess,
  stopProcess,
  until,
  type Started,
} from './processes';

jest.setTimeout(240_000);

const ROOT = join(__dirname, '..', '..');

interface UploadCase {
  name: string;
  filename: string;
  type: string;
  make: () => Promise<Buffer | string>;
  /** `completed` with this extractor, `failed`, or either (a damaged file some readers still make sense of). */
  expect: { status: 'completed'; extractor: string } | { status: 'failed'; reason?: RegExp } | { status: 'either' };
}

/** Every type the extractors read (services/extract), each as users send them. */
const VALID: UploadCase[] = [
  { name: 'text', filename: 'notes.txt', type: 'text/plain', make: async () => 'The Heron depot stores spare turbine blades.', expect: { status: 'completed', extractor: 'text' } },
  { name: 'Markdown', filename: 'guide.md', type: 'text/markdown', make: async () => '# Ibis\n\nNew **Ibis** staff receive a badge.', expect: { status: 'completed', extractor: 'markdown' } },
  { name: 'HTML', filename: 'page.html', type: 'text/html', make: async () => '<html><body><h1>Crane</h1><p>Visitors sign in at gate four.</p></body></html>', expect: { status: 'completed', extractor: 'html' } },
  { name: 'CSV', filename: 'staff.csv', type: 'text/csv', make: async () => 'name,city\nAnn Plover,Lisbon\n', expect: { status: 'completed', extractor: 'csv' } },
  { name: 'JSON', filename: 'config.json', type: 'application/json', make: async () => JSON.stringify({ swift: { region: 'eu-west' } }), expect: { status: 'completed', extractor: 'json' } },
  { name: 'DOCX', filename: 'memo.docx', type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', make: () => docx(['The Stork office closes at six.']), expect: { status: 'completed', extractor: 'docx' } },
  { name: 'PDF', filename: 'report.pdf', type: 'application/pdf', make: () => textPdf(['The Egret pipeline moves 300 barrels per hour.']), expect: { status: 'completed', extractor: 'pdf' } },
  { name: 'PNG (OCR)', filename: 'scan.png', type: 'image/png', make: () => renderPng(['Quarterly revenue of Pelican']), expect: { status: 'completed', extractor: 'ocr' } },
  { name: 'scanned PDF (OCR)', filename: 'scanned.pdf', type: 'application/pdf', make: async () => scannedPdf(await renderPng(['The Albatross warehouse'])), expect: { status: 'completed', extractor: 'pdf+ocr' } },
];

/** A damaged file of each type, and files that only pretend to be one. */
const CORRUPT: UploadCase[] = [
  { name: 'PNG cut after its signature', filename: 'cut.png', type: 'image/png', make: async () => (await renderPng(['Truncated'])).subarray(0, 20), expect: { status: 'failed', reason: /^the OCR engine could not read the file/ } },
  { name: 'PNG cut in half', filename: 'half.png', type: 'image/png', make: async () => { const png = await renderPng(['Half a heron']); return png.subarray(0, png.length >> 1); }, expect: { status: 'either' } },
  { name: 'PNG claiming 60000×60000 pixels', filename: 'bomb.png', type: 'image/png', make: async () => pngClaimingHugeSize(), expect: { status: 'failed', reason: /^the image is too large to read: 60000×60000 pixels/ } },
  { name: 'JPEG of noise', filename: 'photo.jpg', type: 'image/jpeg', make: async () => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), noise(4096)]), expect: { status: 'failed' } },
  { name: 'GIF of noise', filename: 'anim.gif', type: 'image/gif', make: async () => Buffer.concat([Buffer.from('GIF89a'), noise(2048, 3)]), expect: { status: 'failed' } },
  { name: 'PDF of garbage', filename: 'garbage.pdf', type: 'application/pdf', make: async () => Buffer.concat([Buffer.from('%PDF-1.7\n'), noise(8192, 11)]), expect: { status: 'failed', reason: /^unreadable PDF: / } },
  { name: 'PDF cut in half', filename: 'half.pdf', type: 'application/pdf', make: async () => { const pdf = await textPdf(['The Egret pipeline']); return pdf.subarray(0, pdf.length >> 1); }, expect: { status: 'either' } },
  { name: 'PDF scan of 49 million pixels', filename: 'huge-scan.pdf', type: 'application/pdf', make: async () => pdfWithImage(7000, 7000), expect: { status: 'failed', reason: /^no text could be extracted/ } },
  { name: 'DOCX that is a broken zip', filename: 'broken.docx', type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', make: async () => Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), noise(2048, 5)]), expect: { status: 'failed', reason: /DOCX/ } },
  { name: 'DOCX without its document part', filename: 'empty.docx', type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', make: docxWithoutDocument, expect: { status: 'failed', reason: /DOCX/ } },
  { name: 'DOCX that unzips to 50 MB of paragraphs', filename: 'bomb.docx', type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', make: docxBomb, expect: { status: 'failed', reason: /^the DOCX reader (ran out of memory|took longer than)/ } },
  { name: 'JSON cut short', filename: 'cut.json', type: 'application/json', make: async () => '{"swift": {"region": "eu-', expect: { status: 'failed', reason: /not valid JSON/ } },
  { name: 'JSON nested 100000 deep', filename: 'deep.json', type: 'application/json', make: async () => `${'['.repeat(100_000)}1${']'.repeat(100_000)}`, expect: { status: 'either' } },
  { name: 'CSV with an unterminated quote', filename: 'quote.csv', type: 'text/csv', make: async () => 'name,city\n"Ann,Lisbon\nBob,Porto\n', expect: { status: 'either' } },
  { name: 'HTML that is only tags', filename: 'tags.html', type: 'text/html', make: async () => '<<<div><script>while(1){}</script><p></p>', expect: { status: 'either' } },
  // Hostile to the HTML reader (unclosed elements), yet nothing of it reaches PostgreSQL's text parser (see the
  // note on unclosed comments in docs/memory.md).
  { name: 'HTML of 2 MB of unclosed script elements', filename: 'scripts.html', type: 'text/html', make: async () => '<script>'.repeat(250_000), expect: { status: 'failed', reason: /^no text could be extracted/ } },
  { name: 'Markdown of 2 MB of unclosed image brackets', filename: 'brackets.md', type: 'text/markdown', make: async () => '# Lead\n\n' + '!['.repeat(1_000_000), expect: { status: 'either' } },
  { name: 'text that is not UTF-8', filename: 'latin1.txt', type: 'text/plain', make: async () => Buffer.concat([Buffer.from([0xff, 0xfe, 0xfd]), Buffer.from(' Caf\xe9 menu', 'latin1')]), expect: { status: 'either' } },
  { name: 'empty file', filename: 'empty.txt', type: 'text/plain', make: async () => Buffer.alloc(0), expect: { status: 'failed', reason: /^no text could be extracted/ } },
  { name: 'binary of no known type', filename: 'blob.bin', type: 'application/octet-stream', make: async () => Buffer.concat([Buffer.from([0, 1, 2, 3]), noise(1024, 13)]), expect: { status: 'failed', reason: /^unsupported file type$/ } },
];

/** What a failed upload's reason must never carry: stack frames or machine paths. */
function expectReadableReason(reason: unknown): void {
  expect(typeof reason).toBe('string');
  expect((reason as string).length).toBeGreaterThan(5);
  expect(reason).not.toMatch(/\n\s*at |\/(?:work|home|app|tmp|usr|root)\/|node_modules|\.ts\b|ERR_UNKNOWN_FILE_EXTENSION/);
}

type Settled = { status: 'completed' | 'failed'; error: string | null; extractor: string | null; doc_id: string | null; upload_id: string };

function checkSettled(c: UploadCase, done: Settled): void {
  if (done.status === 'failed') expectReadableReason(done.error);
  else expect(done.doc_id).toEqual(expect.any(String));
  if (c.expect.status === 'completed') expect({ name: c.name, status: done.status, extractor: done.extractor, error: done.error }).toEqual({ name: c.name, status: 'completed', extractor: c.expect.extractor, error: null });
  else if (c.expect.status === 'failed') {
    expect({ name: c.name, status: done.status }).toEqual({ name: c.name, status: 'failed' });
    if (c.expect.reason) expect(done.error).toMatch(c.expect.reason);
  }
  else expect(['completed', 'failed']).toContain(done.status);
}

describe('npm start: no upload, parser or worker thread takes Lore down', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lore-e2e-uploads-'));
  let lore: Started;
  let url: string;
  let ops: string;
  let key: string;

  beforeAll(async () => {
    const [port, opsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
    url = `http://127.0.0.1:${port}`;
    ops = `http://127.0.0.1:${opsPort}`;
    // Exactly the README's way: `npm start`, with the port and data directory it documents.
    lore = startProcess('npm', ['start'], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), LORE_OPS_PORT: String(opsPort), LORE_ADMIN_PORT: String(adminPort), LORE_DATA_DIR: dataDir },
    });
    const credentials = join(dataDir, 'dev-credentials.json');
    key = await until('dev-credentials.json', async () => (existsSync(credentials) ? (JSON.parse(readFileSync(credentials, 'utf8')) as { api_key?: string }).api_key : undefined), 120_000, lore);
    await until('the public port to answer', async () => ((await fetch(`${url}/api/v1/pages/ping`, { headers: { 'x-api-key': key } })).status === 200 ? true : undefined), 60_000, lore);
  });
  afterAll(async () => {
    if (lore) await stopProcess(lore);
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** The process is there, its readiness probe is green and an authenticated API call answers. */
  async function expectAlive(after: string): Promise<void> {
    if (!lore.alive()) throw new Error(`Lore exited after ${after}:\n${lore.output().slice(-6000)}`);
    const ready = await fetch(`${ops}/readyz`);
    expect({ after, readyz: ready.status }).toEqual({ after, readyz: 200 });
    const ping = await fetch(`${url}/api/v1/pages/ping`, { headers: { 'x-api-key': key } });
    expect({ after, ping: ping.status }).toEqual({ after, ping: 200 });
  }

  async function uploadAndSettle(c: UploadCase): Promise<Settled> {
    const form = new FormData();
    form.append('file', new Blob([await c.make()], { type: c.type }), c.filename);
    const res = await fetch(`${url}/api/v1/memory/uploads`, { method: 'POST', headers: { 'x-api-key': key }, body: form });
    const accepted = (await res.json()) as { upload_id: string; status: string };
    expect({ name: c.name, status: res.status, upload: accepted.status }).toEqual({ name: c.name, status: 202, upload: 'pending' });
    return until(
      `upload "${c.name}" to settle`,
      async () => {
        const r = await fetch(`${url}/api/v1/memory/uploads/${accepted.upload_id}`, { headers: { 'x-api-key': key } });
        const body = (await r.json()) as Settled;
        return body.status === 'completed' || body.status === 'failed' ? body : undefined;
      },
      120_000,
      lore,
    );
  }

  it.each([...VALID, ...CORRUPT])('$name: the upload settles and Lore still answers', async (c) => {
    const done = await uploadAndSettle(c);
    checkSettled(c, done);
    await expectAlive(c.name);
  });

  describe('malformed multipart bodies answer 4xx and leave Lore running', () => {
    const uploads = () => `${url}/api/v1/memory/uploads`;
    const headers = (contentType: string, extra: Record<string, string> = {}) => ({ 'x-api-key': key, 'content-type': contentType, ...extra });
    const file = { name: 'file', filename: 'a.txt', type: 'text/plain', data: 'The Heron depot stores spare turbine blades.' };

    const cases: Array<{ name: string; send: () => Promise<{ status: number | null; body: string }>; status: number[] }> = [
      { name: 'multipart without a boundary', send: () => rawRequest(uploads(), { headers: headers('multipart/form-data'), body: multipart('b1', [file]) }), status: [400] },
      { name: 'a boundary the body never uses', send: () => rawRequest(uploads(), { headers: headers('multipart/form-data; boundary=declared'), body: multipart('other', [file]) }), status: [400] },
      { name: 'a body cut before its closing boundary', send: () => rawRequest(uploads(), { headers: headers('multipart/form-data; boundary=b2'), body: multipart('b2', [file], false).subarray(0, 90) }), status: [400] },
      { name: 'no file part, only a field', send: () => rawRequest(uploads(), { headers: headers('multipart/form-data; boundary=b3'), body: multipart('b3', [{ name: 'note', data: 'hello' }]) }), status: [400] },
      { name: 'a file part under another name', send: () => rawRequest(uploads(), { headers: headers('multipart/form-data; boundary=b4'), body: multipart('b4', [{ ...file, name: 'document' }]) }), status: [400] },
      { name: 'part headers of garbage', send: () => rawRequest(uploads(), { headers: headers('multipart/form-data; boundary=b5'), body: Buffer.concat([Buffer.from('--b5\r\n'), noise(3000, 17), Buffer.from('\r\n--b5--\r\n')]) }), status: [400] },
      { name: 'a body of noise', send: () => rawRequest(uploads(), { headers: headers('multipart/form-data; boundary=b6'), body: noise(5000, 19) }), status: [400] },
      { name: 'JSON instead of multipart', send: () => rawRequest(uploads(), { headers: headers('application/json'), body: Buffer.from('{"file":"x"}') }), status: [415] },
      {
        name: 'a declared length above the limit',
        send: () => rawRequest(uploads(), { headers: headers('multipart/form-data; boundary=b7', { 'content-length': String(30 * 1024 * 1024) }), body: multipart('b7', [file]), abortAfterBytes: 200 }),
        status: [413],
      },
      {
        name: 'a streamed file past the limit (no length declared)',
        send: () =>
          rawRequest(uploads(), {
            headers: headers('multipart/form-data; boundary=b8', { 'transfer-encoding': 'chunked' }),
            chunks: (async function* () {
              yield Buffer.from('--b8\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n');
              const mib = Buffer.alloc(1024 * 1024, 0x61);
              for (let i = 0; i < 27; i += 1) yield mib;
              yield Buffer.from('\r\n--b8--\r\n');
            })(),
          }),
        status: [413],
      },
    ];

    it.each(cases)('$name', async (c) => {
      const r = await c.send();
      // A server may answer an oversized or broken body and close the connection before reading the rest.
      if (r.status !== null) {
        expect({ name: c.name, status: c.status.includes(r.status) ? 'expected' : r.status }).toEqual({ name: c.name, status: 'expected' });
        expect(r.body).toContain('"error"');
      } else expect(c.status).toContain(413);
      await expectAlive(c.name);
    });

    it('a client that hangs up in the middle of a file', async () => {
      const body = multipart('b9', [{ ...file, data: noise(256 * 1024, 23) }]);
      await rawRequest(uploads(), { headers: headers('multipart/form-data; boundary=b9', { 'content-length': String(body.length) }), body, abortAfterBytes: 64 * 1024 });
      await expectAlive('a client hanging up');
    });
  });
});

describe('the image entry points (graph and graph-worker from dist/ under the image NODE_OPTIONS)', () => {
  let db: TestDatabase;
  let api: Started | undefined;
  let worker: Started | undefined;
  let apiUrl: string;
  let workerUrl: string;
  const secret = randomBytes(24).toString('hex');
  const signer = new IdentitySigner(secret);
  const run = uniqueSuffix();
  const who: Identity = { tenant_id: `t_img_${run}`, workspace_id: `ws_${run}`, memory_id: `mem_${run}`, credential: 'ck_test', subject: `key_${run}`, role: 'admin' };
  const home = mkdtempSync(join(tmpdir(), 'lore-image-home-'));

  beforeAll(async () => {
    // What the image's build stage compiles for these two entry points.
    buildService('graph');
    db = await freshDatabase('lore_e2e_img');
    const image = runtimeStageEnv(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'), ROOT);
    expect(image.NODE_OPTIONS).toMatch(/--require=\S+register\.js/);
    const [apiPort, workerPort] = [await freePort(), await freePort()];
    apiUrl = `http://127.0.0.1:${apiPort}`;
    workerUrl = `http://127.0.0.1:${workerPort}`;
    const env = (port: number, extra: Record<string, string>) => ({
      PATH: process.env.PATH ?? '',
      // No model cache, like the image.
      HOME: home,
      ...image,
      LORE_LOG_LEVEL: 'info',
      LORE_DATABASE_URL: db.url,
      LORE_DATABASE_OWNER_URL: db.ownerUrl,
      LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
      LORE_IDENTITY_SECRET: secret,
      LORE_GRAPH_HOST: '127.0.0.1',
      LORE_GRAPH_PORT: String(port),
      LORE_GRAPH_WORKER_PORT: String(port),
      LORE_GRAPH_CONSUMER_GROUP: `graph-worker-img-${run}`,
      ...extra,
    });
    api = startProcess(process.execPath, ['services/graph/dist/main.js'], { cwd: ROOT, env: env(apiPort, { LORE_GRAPH_MIGRATE: 'true' }) });
    await until('graph /readyz', async () => ((await fetch(`${apiUrl}/readyz`)).status === 200 ? true : undefined), 90_000, api);
    worker = startProcess(process.execPath, ['services/graph/dist/worker-main.js'], { cwd: ROOT, env: env(workerPort, {}) });
    await until('graph-worker /readyz', async () => ((await fetch(`${workerUrl}/readyz`)).status === 200 ? true : undefined), 90_000, worker);
  });
  afterAll(async () => {
    if (worker) await stopProcess(worker);
    if (api) await stopProcess(api);
    await db?.drop();
    rmSync(home, { recursive: true, force: true });
  });

  async function expectBothAlive(after: string): Promise<void> {
    for (const [name, p, base] of [['graph', api!, apiUrl], ['graph-worker', worker!, workerUrl]] as const) {
      if (!p.alive()) throw new Error(`${name} exited after ${after}:\n${p.output().slice(-6000)}`);
      expect({ name, after, readyz: (await fetch(`${base}/readyz`)).status }).toEqual({ name, after, readyz: 200 });
    }
  }

  it.each([
    { name: 'PNG cut after its signature', filename: 'cut.png', type: 'image/png', make: async () => (await renderPng(['Truncated'])).subarray(0, 20), expect: { status: 'failed', reason: /^the OCR engine could not read the file/ } },
    { name: 'PDF of garbage', filename: 'garbage.pdf', type: 'application/pdf', make: async () => Buffer.concat([Buffer.from('%PDF-1.7\n'), noise(8192, 11)]), expect: { status: 'failed', reason: /^unreadable PDF: / } },
    { name: 'PNG (OCR)', filename: 'scan.png', type: 'image/png', make: () => renderPng(['Quarterly revenue of Pelican']), expect: { status: 'completed', extractor: 'ocr' } },
    { name: 'PDF', filename: 'report.pdf', type: 'application/pdf', make: () => textPdf(['The Egret pipeline moves 300 barrels per hour.']), expect: { status: 'completed', extractor: 'pdf' } },
  ] as UploadCase[])('$name: settles, and both processes still answer', async (c) => {
    const identity = { [IDENTITY_HEADER]: await signer.sign(who) };
    const form = new FormData();
    form.append('file', new Blob([await c.make()], { type: c.type }), c.filename);
    const res = await fetch(`${apiUrl}/api/v1/memory/uploads`, { method: 'POST', headers: identity, body: form });
    expect(res.status).toBe(202);
    const { upload_id } = (await res.json()) as { upload_id: string };
    const done = await until(
      `upload "${c.name}" to settle`,
      async () => {
        const r = await fetch(`${apiUrl}/api/v1/memory/uploads/${upload_id}`, { headers: { [IDENTITY_HEADER]: await signer.sign(who) } });
        const body = (await r.json()) as Settled;
        return body.status === 'completed' || body.status === 'failed' ? body : undefined;
      },
      120_000,
      worker,
    );
    checkSettled(c, done);
    await expectBothAlive(c.name);
  });
});
