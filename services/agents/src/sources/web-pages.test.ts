import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { createLogger } from '@lore/runtime';
import { companyOverview } from '../application/company-overview';
import { createPageReader, PageReadError, type PageReader } from './web-pages';

/** A site on a loopback port: robots.txt disallows /private/; /slow never answers; /pdf is not HTML; /gone is 404. */
let server: Server;
let base: string;
let reader: PageReader;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/robots.txt') return res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n');
    if (req.url === '/slow') return; // never answers
    if (req.url === '/gzip') return res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(gzipSync('<p>compressed</p>'));
    if (req.url === '/pdf') return res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4');
    if (req.url === '/') return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<title>Home</title><a href="/slow">Our team</a>');
    if (req.url === '/private/x' || req.url === '/page') return res.writeHead(200, { 'content-type': 'text/html' }).end('<p>ok</p>');
    res.writeHead(404, { 'content-type': 'text/html' }).end('<p>no</p>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  reader = createPageReader({ allowLoopback: true }, { timeoutMs: 400 });
});
afterAll(async () => {
  reader.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

async function kindOf(p: Promise<unknown>): Promise<[string, string]> {
  try {
    await p;
  } catch (err) {
    if (err instanceof PageReadError) return [err.kind, err.message];
    throw err;
  }
  return ['ok', ''];
}

describe('reading a page', () => {
  it('reads an HTML page', async () => {
    await expect(reader.read(`${base}/page`)).resolves.toMatchObject({ url: `${base}/page`, html: '<p>ok</p>', truncated: false });
  });

  it('says why a page was not read', async () => {
    expect(await kindOf(reader.read(`${base}/private/x`))).toEqual(['disallowed', expect.stringContaining("robots.txt does not allow")]);
    expect(await kindOf(reader.read(`${base}/slow`))).toEqual(['unreachable', expect.stringContaining('no answer within 400 ms')]);
    expect(await kindOf(reader.read(`${base}/pdf`))).toEqual(['not_html', expect.stringContaining('application/pdf')]);
    expect(await kindOf(reader.read(`${base}/gone`))).toEqual(['http_error', expect.stringContaining('answered 404')]);
    expect(await kindOf(reader.read('http://169.254.169.254/'))).toEqual(['refused', expect.stringContaining('Lore does not read this address')]);
  });

  it('refuses loopback without the switch, before any request', async () => {
    const strict = createPageReader({ allowLoopback: false });
    try {
      expect(await kindOf(strict.read(`${base}/page`))).toEqual(['refused', expect.any(String)]);
    } finally {
      strict.close();
    }
  });

  it("keeps a company overview within its deadline: a people page that does not answer in time is left out", async () => {
    const slowReader = createPageReader({ allowLoopback: true }, { timeoutMs: 5_000 });
    try {
      const started = Date.now();
      const o = await companyOverview({ pages: slowReader, logger: createLogger({ level: 'silent', service: 't' }), timeoutMs: 500 }, { companyUrl: `${base}/` });
      expect(o.company_name).toBe('Home');
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      slowReader.close();
    }
  });
});

it('stops waiting for a name that resolves slowly at the caller\'s deadline', async () => {
  const slowNames = createPageReader({ allowLoopback: false, lookup: () => new Promise((r) => setTimeout(() => r([{ address: '93.184.216.34', family: 4 }]), 5_000)) }, { timeoutMs: 400 });
  try {
    const started = Date.now();
    const [kind, message] = await kindOf(slowNames.read('https://slow-dns.example/', AbortSignal.timeout(200)));
    expect([kind, message]).toEqual(['unreachable', 'slow-dns.example could not be read in time']);
    expect(Date.now() - started).toBeLessThan(2_000);
  } finally {
    slowNames.close();
  }
});

it('does not read a compressed body it did not ask for as a page', async () => {
  expect(await kindOf(reader.read(`${base}/gzip`))).toEqual(['not_html', `${base}/gzip answered a body encoded gzip, which was not asked for`]);
});
