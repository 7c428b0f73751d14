import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { OutboundError, OutboundHttpClient, RobotsPolicy, TargetGuard, type HostLookup } from '@lore/outbound';
import { LoopbackProxy } from '../support/loopback-proxy';
import { LORE_AGENT, LoopbackWeb } from '../support/loopback-web';
import { createTestPki, type TestPki } from '../webhooks/support';

/**
 * The guarded client through an operator's egress proxy (docs/outbound.md, "Egress proxies"), against a real HTTP
 * forward proxy on loopback (test/support/loopback-proxy.ts): http targets go in absolute form, https targets through
 * a CONNECT tunnel to the checked address with the certificate verified for the name, robots.txt and every redirect
 * hop go the same way, and the SSRF guard still refuses forbidden targets before the proxy hears of them.
 */

const USER_AGENT = `${LORE_AGENT}/1 (+https://lore.example/bot)`;

let web: LoopbackWeb;
let proxy: LoopbackProxy;
let pki: TestPki;
let secure: HttpsServer;
let securePort: number;
const seenBySecure: Array<{ host: string | undefined; path: string | undefined }> = [];

/** The world's resolver, plus one public-looking name that answers a private address (a hostile DNS record). */
const lookup = (web: LoopbackWeb): HostLookup => async (hostname) => {
  if (hostname === 'rebind.example.com') return [{ address: '10.0.0.7', family: 4 }];
  if (hostname === 'metadata.example.com') return [{ address: '169.254.169.254', family: 4 }];
  return web.lookup(hostname);
};

const clientVia = (proxyUrl: string, allowLoopback = true): OutboundHttpClient =>
  new OutboundHttpClient({ guard: new TargetGuard({ allowLoopback, lookup: lookup(web) }), userAgent: USER_AGENT, proxy: { url: proxyUrl }, extraCaPem: pki.caPem, timeoutMs: 10_000 });

async function failure(request: Promise<unknown>): Promise<OutboundError> {
  try {
    await request;
  } catch (err) {
    if (err instanceof OutboundError) return err;
    throw err;
  }
  throw new Error('the fetch succeeded');
}

beforeAll(async () => {
  web = await new LoopbackWeb({ seed: 11 }).start();
  proxy = await new LoopbackProxy({ label: 'de' }).start();
  pki = createTestPki(['secure.localhost']);
  secure = createHttpsServer({ key: pki.keyPem, cert: pki.certPem }, (req, res) => {
    seenBySecure.push({ host: req.headers.host, path: req.url });
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<html><head><title>Secure page</title></head><body>tunnelled</body></html>');
  });
  await new Promise<void>((resolve) => secure.listen(0, '127.0.0.1', resolve));
  securePort = (secure.address() as AddressInfo).port;
});

afterAll(async () => {
  await proxy.close();
  await new Promise<void>((resolve) => secure.close(() => resolve()));
  await web.close();
  pki.cleanup();
});

beforeEach(() => {
  proxy.requests.length = 0;
  seenBySecure.length = 0;
});

describe('an http target through the egress proxy', () => {
  it('is sent to the proxy in absolute form with the name, and the answer is the origin page', async () => {
    const client = clientVia(proxy.url);
    try {
      const before = web.requests.length;
      const url = `${web.siteUrl('beta')}/`;
      const page = await client.fetch({ url });
      expect(page.status).toBe(200);
      expect(page.text()).toContain('<html');
      expect(proxy.requests).toEqual([expect.objectContaining({ proxy: 'de', method: 'GET', target: url, status: 200 })]);
      // The origin was reached by the proxy, with the target's own Host header.
      const atOrigin = web.requests.slice(before);
      expect(atOrigin).toHaveLength(1);
      expect(atOrigin[0]).toMatchObject({ host: `beta.localhost:${web.port}`, path: '/' });
    } finally {
      client.close();
    }
  });

  it('asks robots.txt through the proxy too, and a redirect hop is guarded and proxied again', async () => {
    const client = clientVia(proxy.url);
    try {
      const robots = new RobotsPolicy({ client });
      const page = await client.fetch({ url: web.special.redirect301, robots });
      expect(page.status).toBe(200);
      expect(page.redirects.length).toBe(1);
      const targets = proxy.requests.map((r) => r.target);
      expect(targets).toEqual([`${web.siteUrl('alpha')}/robots.txt`, web.special.redirect301, page.url]);
    } finally {
      client.close();
    }
  });

  it('sends the credentials of the proxy URL as Basic, and a proxy that refuses them (407) fails the fetch without forwarding', async () => {
    const locked = await new LoopbackProxy({ label: 'fr', credentials: { user: 'lore', password: 's3cret word' } }).start();
    const good = clientVia(locked.url);
    const bad = clientVia(locked.url.replace('s3cret%20word', 'wrong'));
    try {
      const before = web.requests.length;
      expect((await good.fetch({ url: `${web.siteUrl('gamma')}/` })).status).toBe(200);
      expect(locked.requests[0]).toMatchObject({ status: 200, authorization: `Basic ${Buffer.from('lore:s3cret word').toString('base64')}` });
      const err = await failure(bad.fetch({ url: `${web.siteUrl('gamma')}/` }));
      expect(err).toMatchObject({ kind: 'network_error', message: 'the egress proxy refused the request (407)' });
      expect(locked.requests[1]).toMatchObject({ status: 407 });
      expect(web.requests.length - before).toBe(1);
    } finally {
      good.close();
      bad.close();
      await locked.close();
    }
  });
});

describe('an https target through the egress proxy', () => {
  it('is tunnelled with CONNECT to the checked address, the certificate verified for the name', async () => {
    const client = clientVia(proxy.url);
    try {
      const page = await client.fetch({ url: `https://secure.localhost:${securePort}/inside?q=1` });
      expect(page.status).toBe(200);
      expect(page.text()).toContain('tunnelled');
      // The proxy saw only the authority (pinned: the address the guard checked), never the path or the page.
      expect(proxy.requests).toEqual([expect.objectContaining({ method: 'CONNECT', target: `127.0.0.1:${securePort}`, status: 200 })]);
      expect(seenBySecure).toEqual([{ host: `secure.localhost:${securePort}`, path: '/inside?q=1' }]);
    } finally {
      client.close();
    }
  });

  it('fails when the certificate does not name the host, through the tunnel as directly', async () => {
    const client = clientVia(proxy.url);
    try {
      // 127.0.0.1 is in the certificate; other.localhost is not.
      const err = await failure(client.fetch({ url: `https://other.localhost:${securePort}/` }));
      expect(err.kind).toBe('network_error');
      expect(proxy.requests.map((r) => r.method)).toEqual(['CONNECT']);
      expect(seenBySecure).toEqual([]);
    } finally {
      client.close();
    }
  });

  it('reports a proxy that refuses the tunnel as the proxy failing, not as an answer of the target', async () => {
    const locked = await new LoopbackProxy({ label: 'fr', credentials: { user: 'lore', password: 'pw' } }).start();
    const client = clientVia(locked.url.replace(':pw@', ':nope@'));
    try {
      const err = await failure(client.fetch({ url: `https://secure.localhost:${securePort}/` }));
      expect(err.kind).toBe('network_error');
      expect(err.message).toMatch(/egress proxy refused the tunnel \(407\)/);
      expect(seenBySecure).toEqual([]);
    } finally {
      client.close();
      await locked.close();
    }
  });
});

describe('the SSRF guard still decides before the proxy', () => {
  const refusedTargets = [
    ['a metadata address', 'http://169.254.169.254/latest/meta-data/'],
    ['a private address', 'http://10.0.0.1/'],
    ['loopback (not opened for this client)', 'http://127.0.0.1:9/'],
    ['a name answering a private address', 'http://rebind.example.com/'],
    ['a name answering the metadata address over https', 'https://metadata.example.com/'],
    ['an IPv4-mapped IPv6 loopback', 'http://[::ffff:127.0.0.1]/'],
  ] as const;

  it.each(refusedTargets)('refuses %s without a word to the proxy', async (_what, url) => {
    const client = clientVia(proxy.url, false);
    try {
      const err = await failure(client.fetch({ url }));
      expect(err.kind).toBe('refused');
      expect(proxy.requests).toEqual([]);
    } finally {
      client.close();
    }
  });

  it('refuses a redirect to the metadata address after the first hop went through the proxy', async () => {
    const client = clientVia(proxy.url);
    try {
      const err = await failure(client.fetch({ url: web.special.redirectMetadata }));
      expect(err.kind).toBe('refused');
      expect(proxy.requests.map((r) => r.target)).toEqual([web.special.redirectMetadata]);
    } finally {
      client.close();
    }
  });

  it('refuses a proxy address that is not an http(s) URL without a path', () => {
    for (const bad of ['socks5://127.0.0.1:1080', 'http://127.0.0.1:3128/path', 'not a url']) {
      expect(() => new OutboundHttpClient({ guard: new TargetGuard(), userAgent: USER_AGENT, proxy: { url: bad } })).toThrow(/egress proxy/);
    }
  });
});
