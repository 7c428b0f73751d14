import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import JSZip from 'jszip';
import { requireEnv } from '../support/infra';

/** A process a suite started, with everything it wrote. */
export interface Started {
  child: ChildProcess;
  output: () => string;
  alive: () => boolean;
}

/** Compiles one service and what it depends on (`tsc -b services/<name>`) as the image's build stage does; fails with tsc's output. */
export function buildService(name: string): void {
  try {
    execFileSync('npx', ['tsc', '-b', `services/${name}`], { cwd: join(__dirname, '..', '..'), stdio: 'pipe', encoding: 'utf8' });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`tsc -b services/${name} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`.slice(0, 6000));
  }
}

/** A port nothing listens on right now (bound once on loopback, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a command in its own process group (so `npm start`'s node grandchild stops with it) and keeps its
 * output for failure messages.
 */
export function startProcess(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Started {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString('utf8');
    if (out.length > 400_000) out = out.slice(-200_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, output: () => out, alive: () => child.exitCode === null && child.signalCode === null };
}

/** SIGTERM to the process group, SIGKILL after `graceMs`; resolves when the direct child has exited. */
export async function stopProcess(p: Started, graceMs = 15_000): Promise<void> {
  if (!p.alive()) return;
  const exited = new Promise<void>((resolve) => p.child.once('exit', () => resolve()));
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-p.child.pid!, s);
    } catch {
      // the group is gone already
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** A process's /readyz: its status and body. */
export async function readyz(base: string): Promise<{ status: number; body: any }> {
  const r = await fetch(`${base}/readyz`);
  return { status: r.status, body: await r.json().catch(() => undefined) };
}

/** `n` ports nothing listens on, all different and none of `taken` (one released port may be handed out again at once). */
export async function distinctFreePorts(n: number, taken: number[] = []): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) {
    const port = await freePort();
    if (!taken.includes(port)) ports.add(port);
  }
  return [...ports];
}

/** A webhook receiver on loopback that keeps every request's raw body and headers and acknowledges with 204. */
export interface Receiver {
  url: string;
  received: Array<{ headers: IncomingHttpHeaders; body: Buffer }>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Receiver['received'] = [];
  const server: Server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/lore-hooks`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Polls `probe` until it returns a value; fails with the process output when the process exits or time runs out. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, proc?: Started): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc && !proc.alive()) throw new Error(`the process exited (${proc.child.exitCode ?? proc.child.signalCode}) while waiting for ${what}:\n${proc.output().slice(-6000)}`);
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${proc ? `:\n${proc.output().slice(-6000)}` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Sends bytes exactly as given (a client library would repair a malformed multipart body). Resolves with the
 * status, or with `null` when the server closed the connection without answering.
 */
export function rawRequest(
  url: string,
  options: { method?: string; headers: Record<string, string>; body?: Buffer; chunks?: AsyncIterable<Buffer>; abortAfterBytes?: number },
): Promise<{ status: number | null; body: string }> {
  return new Promise((resolve) => {
    const req = request(url, { method: options.method ?? 'POST', headers: options.headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? null, body }));
      res.on('error', () => resolve({ status: res.statusCode ?? null, body }));
    });
    req.on('error', () => resolve({ status: null, body: '' }));
    if (options.body) {
      if (options.abortAfterBytes !== undefined) {
        req.write(options.body.subarray(0, options.abortAfterBytes), () => setTimeout(() => req.destroy(), 100));
        return;
      }
      req.end(options.body);
      return;
    }
    if (options.chunks) {
      void (async () => {
        try {
          for await (const chunk of options.chunks!) {
            if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
            if (req.destroyed) return;
          }
          req.end();
        } catch {
          req.destroy();
        }
      })();
      return;
    }
    req.end();
  });
}

/** A multipart/form-data body written by hand, so a test can break any part of it. */
export function multipart(boundary: string, parts: Array<{ name: string; filename?: string; type?: string; data: Buffer | string }>, close = true): Buffer {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`));
    chunks.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data));
    chunks.push(Buffer.from('\r\n'));
  }
  if (close) chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A well-formed PNG header that claims a 60000×60000 image (14 GB of pixels) over a few bytes of data. */
export function pngClaimingHugeSize(): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(60_000, 0);
  ihdr.writeUInt32BE(60_000, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', Buffer.from([0x78, 0x9c, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01])),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A DOCX package (a valid zip) without its document part. */
export async function docxWithoutDocument(): Promise<Buffer> {
  const zip = new JSZip();
  zip.file('[Content_Types].xml', '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>');
  return zip.generateAsync({ type: 'nodebuffer' });
}

/** Deterministic bytes that look like nothing (a fixed LCG, so a failure can be replayed). */
export function noise(length: number, seed = 7): Buffer {
  const out = Buffer.alloc(length);
  let x = seed;
  for (let i = 0; i < length; i += 1) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out[i] = x >> 16;
  }
  return out;
}

export { pdfWithImage } from '@lore/extract/scan-pdf';

/**
 * A DOCX of about 150 KB whose document part unzips to 50 MB of empty paragraphs: reading it as a document tree
 * takes more memory than a process's heap holds.
 */
export async function docxBomb(): Promise<Buffer> {
  const zip = new JSZip();
  const paragraph = '<w:p><w:r><w:t>a</w:t></w:r></w:p>';
  zip.file(
    '[Content_Types].xml',
    '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
      '<Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
  );
  zip.file(
    '_rels/.rels',
    '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
  );
  zip.file('word/document.xml', `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${paragraph.repeat(Math.floor(50e6 / paragraph.length))}</w:body></w:document>`);
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE', compressionOptions: { level: 9 } });
}

/** Deletes a suite's keys from the shared test Redis: the given keys, or every key under a prefix. */
export async function removeRedisKeys(what: string | string[]): Promise<void> {
  const redis = new Redis(requireEnv('LORE_TEST_REDIS_URL'), { maxRetriesPerRequest: 1 });
  try {
    if (Array.isArray(what)) {
      if (what.length > 0) await redis.del(...what);
      return;
    }
    for await (const keys of redis.scanStream({ match: `${what}*`, count: 500 }) as AsyncIterable<string[]>) {
      if (keys.length > 0) await redis.del(...keys);
    }
  } finally {
    redis.disconnect();
  }
}

/** Deletes the Kafka topics and consumer groups of one install prefix (configuration.md: `<prefix>.<name>`). */
export async function removeKafkaInstall(prefix: string, clientId: string): Promise<void> {
  const admin = new Kafka({ clientId, brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(`${prefix}.`));
    if (groups.length > 0) await admin.deleteGroups(groups);
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${prefix}.`));
    if (topics.length > 0) await admin.deleteTopics({ topics });
  } finally {
    await admin.disconnect();
  }
}

/**
 * The top-level keys a JSON log line names more than once (JSON.parse keeps the last, so a parsed line cannot show
 * them): a scan of the line's text that skips strings and nested values.
 */
export function duplicateTopLevelKeys(line: string): string[] {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '"') {
      let j = i + 1;
      while (j < line.length && line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      const text = line.slice(i + 1, j);
      let k = j + 1;
      while (line[k] === ' ') k++;
      if (depth === 1 && line[k] === ':') {
        if (seen.has(text)) repeated.add(text);
        seen.add(text);
      }
      i = j;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return [...repeated];
}
