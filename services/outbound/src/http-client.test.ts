import { OutboundError, OutboundHttpClient, parseContentType, pinnedLookupOf, type OutboundRequest } from './http-client';
import { TargetGuard } from './target-guard';
import { startServer, startSilentListener, zoneLookup, type TestServer } from './test-servers';

const UA = 'LoreTest/1 (+https://lore.example/bot)';

function client(options: { lookup?: ReturnType<typeof zoneLookup>; allowLoopback?: boolean } & Partial<ConstructorParameters<typeof OutboundHttpClient>[0]> = {}) {
  const { lookup, allowLoopback = true, ...rest } = options;
  return new OutboundHttpClient({ guard: new TargetGuard({ allowLoopback, ...(lookup ? { lookup } : {}) }), userAgent: UA, timeoutMs: 3000, ...rest });
}

async function failure(c: OutboundHttpClient, req: OutboundRequest): Promise<OutboundError> {
  try {
    await c.fetch(req);
  } catch (err) {
    if (err instanceof OutboundError) return err;
    throw err;
  }
  throw new Error('expected the fetch to fail');
}

const servers: TestServer[] = [];
async function server(...args: Parameters<typeof startServer>): Promise<TestServer> {
  const s = await startServer(...args);
  servers.push(s);
  return s;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('OutboundHttpClient', () => {
  it('fetches a page, sending its user agent and no compression, and reports content type, charset and decoded text', async () => {
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=ISO-8859-1' });
      res.end(Buffer.from([0x63, 0x61, 0x66, 0xe9])); // "café" in Latin-1
    });
    const c = client();
    const res = await c.fetch({ url: `${s.url}/page?q=1`, headers: { accept: 'text/html', Host: 'evil.example', 'User-Agent': 'spoofed' } });
    c.close();
    expect(res).toMatchObject({ status: 200, contentType: 'text/html', charset: 'iso-8859-1', truncated: false, redirects: [], address: '127.0.0.1' });
    expect(res.text()).toBe('café');
    expect(s.requests[0]).toMatchObject({ method: 'GET', path: '/page?q=1' });
    expect(s.requests[0]!.headers).toMatchObject({ 'user-agent': UA, 'accept-encoding': 'identity', accept: 'text/html', host: `127.0.0.1:${s.port}` });
  });

  it('sends a method, headers and a body', async () => {
    const s = await server((_req, res) => res.writeHead(204).end());
    const c = client();
    const res = await c.fetch({ url: `${s.url}/in`, method: 'POST', headers: { 'content-type': 'application/json', 'x-lore': 'yes' }, body: '{"a":1}' });
    c.close();
    expect(res.status).toBe(204);
    expect(res.body.length).toBe(0);
    expect(s.requests[0]).toMatchObject({ method: 'POST', body: '{"a":1}' });
    expect(s.requests[0]!.headers).toMatchObject({ 'content-type': 'application/json', 'content-length': '7', 'x-lore': 'yes' });
  });

  it('sends a GET once more on a new connection when the kept-alive one breaks before any answer; never a POST, never a fresh connection', async () => {
    // The server breaks the connection of every second request without a word, as a server closing an idle
    // kept-alive connection does just as the client reuses it.
    let n = 0;
    const s = await server((req, res) => (++n % 2 === 0 ? res.socket!.destroy() : res.end(`answer to ${req.method} ${req.path}`)));
    const c = client();
    expect((await c.fetch({ url: `${s.url}/a` })).text()).toBe('answer to GET /a');
    // The second request goes on the kept connection and breaks; the third, on a new connection, answers.
    const again = await c.fetch({ url: `${s.url}/b` });
    expect([again.status, again.text(), s.connections()]).toEqual([200, 'answer to GET /b', 2]);
    expect(s.requests.map((r) => r.path)).toEqual(['/a', '/b', '/b']);
    // A POST on a reused connection that breaks is not sent twice: the server may have acted on it.
    n = 1;
    expect((await failure(c, { url: `${s.url}/c`, method: 'POST', body: 'x' })).kind).toBe('network_error');
    expect(s.requests.filter((r) => r.path === '/c')).toHaveLength(1);
    // A new connection that breaks is the server's answer, not a stale connection: no second try.
    c.close();
    n = 1;
    expect((await failure(c, { url: `${s.url}/d` })).kind).toBe('network_error');
    expect(s.requests.filter((r) => r.path === '/d')).toHaveLength(1);
    c.close();
  });

  it('refuses a header value with a line break before connecting', async () => {
    const s = await server((_req, res) => res.end('x'));
    const c = client();
    const err = await failure(c, { url: s.url, headers: { 'x-a': 'a\r\nx-injected: 1' } });
    c.close();
    expect(err.kind).toBe('invalid_request');
    expect(s.connections()).toBe(0);
  });

  describe('response size', () => {
    it('refuses a declared length over the limit without reading the body', async () => {
      const s = await server((_req, res) => res.writeHead(200, { 'content-length': '5000' }).end('x'.repeat(5000)));
      const c = client();
      const err = await failure(c, { url: s.url, maxResponseBytes: 1000 });
      c.close();
      expect(err.kind).toBe('too_large');
      expect(err.partial.status).toBe(200);
    });

    it('stops reading a streamed body at the limit (error by default, the first bytes with truncate)', async () => {
      const s = await server((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        // Chunked, no length: the limit must hold while reading. The server would go on for 50 MB.
        const chunk = Buffer.alloc(16 * 1024, 0x61);
        let written = 0;
        const pump = () => {
          while (written < 50 * 1024 * 1024) {
            written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('close', () => (written = Number.POSITIVE_INFINITY));
        pump();
      });
      const c = client();
      const err = await failure(c, { url: s.url, maxResponseBytes: 100_000 });
      expect(err.kind).toBe('too_large');
      const res = await c.fetch({ url: s.url, maxResponseBytes: 100_000, oversize: 'truncate' });
      c.close();
      expect(res.truncated).toBe(true);
      expect(res.body.length).toBe(100_000);
      expect(res.text()).toBe('a'.repeat(100_000));
    });

    it('takes the limit of each response from its status and type when asked to', async () => {
      const s = await server((req, res) => {
        const type = req.path === '/report.pdf' ? 'application/pdf' : 'text/html';
        res.writeHead(200, { 'content-type': type }).end(Buffer.alloc(5000, 0x61));
      });
      const c = client();
      const seen: Array<{ url: string; status: number; contentType: string | null }> = [];
      const limitFor = (head: { url: string; status: number; headers: Record<string, unknown>; contentType: string | null }) => {
        seen.push(head);
        return head.contentType === 'application/pdf' ? 10_000 : 1000;
      };
      const pdf = await c.fetch({ url: `${s.url}/report.pdf`, maxResponseBytes: 1000, maxResponseBytesFor: limitFor, oversize: 'truncate' });
      const page = await c.fetch({ url: `${s.url}/page.html`, maxResponseBytes: 1000, maxResponseBytesFor: limitFor, oversize: 'truncate' });
      // Without truncate, a declared length over the chosen limit fails as it does with a fixed one.
      const err = await failure(c, { url: `${s.url}/page.html`, maxResponseBytesFor: limitFor });
      c.close();
      expect([pdf.body.length, pdf.truncated]).toEqual([5000, false]);
      expect([page.body.length, page.truncated]).toEqual([1000, true]);
      expect(err.kind).toBe('too_large');
      expect(seen.map((h) => [new URL(h.url).pathname, h.status, h.contentType])).toEqual([
        ['/report.pdf', 200, 'application/pdf'],
        ['/page.html', 200, 'text/html'],
        ['/page.html', 200, 'text/html'],
      ]);
    });
  });

  describe('timeouts', () => {
    it('ends a fetch whose body does not complete within the total deadline, keeping what arrived', async () => {
      const s = await server((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('start');
        // Never ends.
      });
      const c = client();
      const started = Date.now();
      const err = await failure(c, { url: s.url, timeoutMs: 300 });
      c.close();
      expect(err.kind).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(2500);
      expect(err.partial.status).toBe(200);
      expect(err.partial.body?.toString()).toBe('start');
    });

    it('ends a connection whose TLS handshake stalls at the connect deadline', async () => {
      const silent = await startSilentListener();
      const c = client();
      try {
        const started = Date.now();
        const err = await failure(c, { url: `https://127.0.0.1:${silent.port}/`, connectTimeoutMs: 200, timeoutMs: 5000 });
        expect(err.kind).toBe('timeout');
        expect(err.message).toMatch(/no connection within 200 ms/);
        expect(Date.now() - started).toBeLessThan(2000);
      } finally {
        c.close();
        await silent.close();
      }
    });

    it('reports a cancelled fetch as aborted', async () => {
      const s = await server(() => undefined);
      const c = client();
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      const err = await failure(c, { url: s.url, signal: controller.signal });
      c.close();
      expect(err.kind).toBe('aborted');
    });
  });

  describe('redirects', () => {
    it('follows redirects, re-guarding every hop: a hop to a forbidden address is refused before any connection', async () => {
      const inner = await server((_req, res) => res.end('private'));
      const lookup = zoneLookup({ 'start.lore.test': ['127.0.0.1'], 'inner.lore.test': ['10.0.0.7'] });
      const s = await server((req, res) => {
        const to: Record<string, string> = {
          '/ok': '/final',
          '/to-private': `http://inner.lore.test:${inner.port}/`,
          '/to-metadata': 'http://169.254.169.254/latest/meta-data/',
          '/to-mapped': `http://[::ffff:10.0.0.7]:${inner.port}/`,
          '/to-file': 'file:///etc/passwd',
        };
        if (req.path === '/final') return void res.end('done');
        res.writeHead(302, { location: to[req.path] ?? '/final' }).end();
      });
      const c = client({ lookup });
      const ok = await c.fetch({ url: `http://start.lore.test:${s.port}/ok` });
      expect(ok).toMatchObject({ status: 200, url: `http://start.lore.test:${s.port}/final`, redirects: [`http://start.lore.test:${s.port}/final`] });
      expect(ok.text()).toBe('done');
      for (const path of ['/to-private', '/to-metadata', '/to-mapped', '/to-file']) {
        const err = await failure(c, { url: `http://start.lore.test:${s.port}${path}` });
        expect([path, err.kind]).toEqual([path, 'refused']);
      }
      c.close();
      expect(inner.connections()).toBe(0);
    });

    it('stops after the hop limit', async () => {
      const s = await server((req, res) => res.writeHead(307, { location: `/loop/${s.requests.length}` }).end());
      const c = client();
      const err = await failure(c, { url: `${s.url}/loop/0`, maxRedirects: 3 });
      c.close();
      expect(err.kind).toBe('too_many_redirects');
      expect(s.requests.length).toBe(4);
    });

    it('turns a POST into a GET after 303, keeps it after 307, and drops credentials on another origin', async () => {
      const other = await server((_req, res) => res.end('other'));
      const s = await server((req, res) => {
        if (req.path === '/see-other') return void res.writeHead(303, { location: '/landing' }).end();
        if (req.path === '/temporary') return void res.writeHead(307, { location: '/landing' }).end();
        if (req.path === '/away') return void res.writeHead(302, { location: `http://localhost:${other.port}/there` }).end();
        res.end('landed');
      });
      const c = client();
      await c.fetch({ url: `${s.url}/see-other`, method: 'POST', body: 'x=1', headers: { 'content-type': 'text/plain' } });
      expect(s.requests.slice(-1)[0]).toMatchObject({ method: 'GET', path: '/landing', body: '' });
      expect(s.requests.slice(-1)[0]!.headers['content-type']).toBeUndefined();
      await c.fetch({ url: `${s.url}/temporary`, method: 'POST', body: 'x=2' });
      expect(s.requests.slice(-1)[0]).toMatchObject({ method: 'POST', path: '/landing', body: 'x=2' });
      await c.fetch({ url: `${s.url}/away`, headers: { authorization: 'Bearer secret', cookie: 'a=b', accept: 'text/plain' } });
      c.close();
      expect(other.requests[0]!.headers.authorization).toBeUndefined();
      expect(other.requests[0]!.headers.cookie).toBeUndefined();
      expect(other.requests[0]!.headers.accept).toBe('text/plain');
    });

    it('returns the 3xx itself with redirect: manual', async () => {
      const s = await server((_req, res) => res.writeHead(301, { location: '/elsewhere' }).end());
      const c = client();
      const res = await c.fetch({ url: s.url, redirect: 'manual' });
      c.close();
      expect(res.status).toBe(301);
      expect(res.headers.location).toBe('/elsewhere');
      expect(s.requests.length).toBe(1);
    });
  });

  describe('DNS', () => {
    it('resolves once per hop and connects to the checked address: a second, hostile answer never gets a connection', async () => {
      let calls = 0;
      const lookup = zoneLookup({ 'pages.lore.test': () => (++calls === 1 ? ['127.0.0.1'] : ['10.0.0.1']) });
      const s = await server((_req, res) => res.end('hello'));
      const c = client({ lookup });
      const res = await c.fetch({ url: `http://pages.lore.test:${s.port}/` });
      expect(res.text()).toBe('hello');
      expect(res.address).toBe('127.0.0.1');
      // The Host header names the host; the connection went to the address checked (no second lookup by the socket).
      expect(s.requests[0]!.headers.host).toBe(`pages.lore.test:${s.port}`);
      expect(lookup.calls).toEqual(['pages.lore.test']);
      const err = await failure(c, { url: `http://pages.lore.test:${s.port}/` });
      c.close();
      expect(err.kind).toBe('refused');
      expect(s.requests.length).toBe(1);
    });

    it('refuses loopback unless the guard allows it', async () => {
      const s = await server((_req, res) => res.end('x'));
      const c = client({ allowLoopback: false });
      const err = await failure(c, { url: s.url });
      c.close();
      expect(err.kind).toBe('refused');
      expect(s.connections()).toBe(0);
    });
  });
});

describe('pinnedLookupOf', () => {
  it('answers the checked address, never at once: a connect failing at once must find the request listening', async () => {
    const lookup = pinnedLookupOf({ address: '2606:4700::1111', family: 6 });
    const order: string[] = [];
    const single = new Promise<unknown[]>((resolve) => lookup('v6only.example', { family: 0 }, (...a: unknown[]) => resolve(a)));
    const all = new Promise<unknown[]>((resolve) => lookup('v6only.example', { all: true }, (...a: unknown[]) => resolve(a)));
    void single.then(() => order.push('lookup answered'));
    order.push('caller went on');
    // What the HTTP request schedules after creating its socket (it attaches its error handler on a later tick).
    process.nextTick(() => order.push('request attached its handlers'));
    expect(await single).toEqual([null, '2606:4700::1111', 6]);
    expect(await all).toEqual([null, [{ address: '2606:4700::1111', family: 6 }]]);
    expect(order).toEqual(['caller went on', 'request attached its handlers', 'lookup answered']);
  });
});

describe('parseContentType', () => {
  it.each([
    ['text/html; charset=UTF-8', 'text/html', 'utf-8'],
    ['Application/JSON', 'application/json', null],
    ['text/plain; charset="Shift_JIS"', 'text/plain', 'shift_jis'],
    ['not a type', null, null],
    [undefined, null, null],
  ])('%s', (header, contentType, charset) => {
    expect(parseContentType(header)).toEqual({ contentType, charset });
  });
});
