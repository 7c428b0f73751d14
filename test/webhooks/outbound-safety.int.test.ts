import { WebhookHttpClient } from '../../services/gateway/src/webhooks/delivery-client';
import { addressRefusal, checkWebhookUrl, TargetGuard, type HostLookup, type ResolvedAddress } from '@lore/outbound';
import { isIP } from 'node:net';
import { createTestPki, startCountingListener, startReceiver, type Receiver, type TestPki } from './support';

// The real module object, so the spy sees every TLS connection the https module opens.
const tls = require('node:tls') as typeof import('node:tls');

/**
 * Outbound safety (spec 1 issue item 5): URLs aimed at loopback, private, link-local, CGNAT, multicast, unspecified,
 * reserved and metadata addresses, in every spelling, directly or through DNS or a redirect, are refused before any
 * connection. Proof of "no connection": listeners on the loopback addresses count accepted sockets, and a spy counts
 * every TLS connection the client starts.
 */

let pki: TestPki;
let v4: Awaited<ReturnType<typeof startCountingListener>>;
let v6: Awaited<ReturnType<typeof startCountingListener>>;
let receiver: Receiver;
let tlsConnects: jest.SpyInstance;

/** Hostile DNS: names that resolve to forbidden addresses, as an attacker's zone (or /etc/hosts) would. */
const zone: Record<string, string[]> = {
  'loopback.evil.test': ['127.0.0.1'],
  'loopback2.evil.test': ['127.10.20.30'],
  'private10.evil.test': ['10.1.2.3'],
  'private172.evil.test': ['172.20.0.5'],
  'private192.evil.test': ['192.168.1.1'],
  'metadata.evil.test': ['169.254.169.254'],
  'cgnat.evil.test': ['100.64.1.1'],
  'zero.evil.test': ['0.0.0.0'],
  'v6loopback.evil.test': ['::1'],
  'v6mapped.evil.test': ['::ffff:127.0.0.1'],
  'v6ula.evil.test': ['fd12:3456::1'],
  'v6linklocal.evil.test': ['fe80::1'],
  'mixed.evil.test': ['93.184.216.34', '127.0.0.1'],
  'mixed6.evil.test': ['2606:4700::1111', '::1'],
  '127.0.0.1.nip.io': ['127.0.0.1'],
  'customer-intranet.example.com': ['10.0.0.7'],
};

const lookup: HostLookup = async (hostname) => {
  const answers = zone[hostname.toLowerCase().replace(/\.$/, '')];
  if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return answers.map((address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
};

function forbiddenUrls(port: number): string[] {
  const hosts = [
    // IPv4 loopback in every spelling the URL parser folds to 127.0.0.1.
    '127.0.0.1', '127.1', '127.0.1', '2130706433', '0x7f000001', '0x7f.0.0.1', '0x7f.1', '0177.0.0.1', '0177.0.0.01',
    '017700000001', '127.000.000.001', '127.255.255.254', '0x7F.0x00.0x00.0x01',
    // Unspecified.
    '0.0.0.0', '0', '0x0', '00000000000',
    // Private ranges, also spelled in decimal, octal and hex.
    '10.0.0.1', '012.0.0.1', '0xa.0.0.1', '167772161', '172.16.0.1', '172.31.255.255', '192.168.0.1', '0xc0a80001', '3232235521',
    // Link-local and cloud metadata.
    '169.254.169.254', '0xa9fea9fe', '2852039166', '0251.0376.0251.0376', '169.254.0.1', '168.63.129.16',
    // CGNAT, multicast, broadcast and reserved.
    '100.64.0.1', '100.100.100.200', '224.0.0.1', '239.255.255.250', '255.255.255.255', '240.0.0.1', '192.0.0.8', '198.18.0.1', '192.0.2.1',
    // IPv6 loopback, unspecified, mapped, compatible, NAT64, 6to4, Teredo, link-local, unique local, site-local, multicast.
    '[::1]', '[0:0:0:0:0:0:0:1]', '[::]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::ffff:10.0.0.1]', '[::ffff:169.254.169.254]',
    '[::ffff:a9fe:a9fe]', '[::127.0.0.1]', '[::7f00:1]', '[64:ff9b::7f00:1]', '[2002:7f00:1::]', '[2001::1]', '[::ffff:0:7f00:1]',
    '[fe80::1]', '[fc00::1]', '[fd00:ec2::254]', '[fec0::1]', '[ff02::1]', '[100::1]', '[2001:db8::1]',
    // Names that never leave the host or its cloud.
    'localhost', 'LOCALHOST', 'localhost.', 'api.localhost', 'a.b.localhost', 'metadata.google.internal', 'db.internal',
    'printer.local', 'intranet', 'kubernetes.default.svc', 'redis.prod.svc.cluster.local',
    // Names whose DNS answers are forbidden addresses.
    ...Object.keys(zone),
  ];
  return hosts.map((h) => `https://${h}:${port}/hook`);
}

beforeAll(async () => {
  pki = createTestPki();
  v4 = await startCountingListener('127.0.0.1');
  v6 = await startCountingListener('::1', v4.port);
  receiver = await startReceiver(pki, (_i, req) => {
    const target = decodeURIComponent(req.path.replace(/^\/redirect\//, ''));
    const status = [301, 302, 303, 307, 308][Number(req.headers['x-variant'] ?? 0) % 5]!;
    return { status, headers: { location: target } };
  });
  tlsConnects = jest.spyOn(tls, 'connect');
});

afterAll(async () => {
  tlsConnects?.mockRestore();
  await receiver?.close();
  await v4?.close();
  await v6?.close();
  pki?.cleanup();
});

describe('outbound safety of webhook delivery', () => {
  it('refuses at least 60 forbidden URL variants without opening a single connection', async () => {
    const client = new WebhookHttpClient({ guard: new TargetGuard({ lookup }), timeoutMs: 2000, extraCaPem: pki.caPem });
    const urls = forbiddenUrls(v4.port);
    expect(urls.length).toBeGreaterThanOrEqual(60);
    tlsConnects.mockClear();
    const outcomes: Array<{ url: string; outcome: string; error: string | null }> = [];
    for (const url of urls) {
      const r = await client.send({ url, body: '{}', headers: {} });
      outcomes.push({ url, outcome: r.outcome, error: r.error });
    }
    client.close();
    expect(outcomes.filter((o) => o.outcome !== 'refused')).toEqual([]);
    expect(tlsConnects).not.toHaveBeenCalled();
    expect(v4.accepted()).toBe(0);
    expect(v6.accepted()).toBe(0);
  });

  it('with LORE_WEBHOOKS_ALLOW_LOOPBACK, still refuses every target that is not loopback, without a connection', async () => {
    // The worker's guard with the setting on: https only, loopback opened, nothing else.
    const client = new WebhookHttpClient({ guard: new TargetGuard({ protocols: ['https:'], allowLoopback: true, lookup }), timeoutMs: 2000, extraCaPem: pki.caPem });
    // What the setting opens (loopback, however spelled or resolved, and names whose answers are loopback or public)
    // is left out; every other target must stay refused.
    const opened = (u: string) => {
      const host = new URL(u).hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
      if (host === 'localhost' || host.endsWith('.localhost')) return true;
      const answers = isIP(host) ? [host] : zone[host];
      return answers !== undefined && answers.every((a) => addressRefusal(a, true) === null);
    };
    const urls = [
      ...forbiddenUrls(v4.port).filter((u) => !opened(u)),
      'http://hooks.example.com/plain',
      `http://10.0.0.1:${v4.port}/plain`,
      `http://169.254.169.254/latest/meta-data/`,
    ];
    expect(urls.length).toBeGreaterThanOrEqual(50);
    tlsConnects.mockClear();
    const outcomes = [];
    for (const url of urls) outcomes.push({ url, outcome: (await client.send({ url, body: '{}', headers: {} })).outcome });
    client.close();
    expect(outcomes.filter((o) => o.outcome !== 'refused')).toEqual([]);
    expect(tlsConnects).not.toHaveBeenCalled();
    expect(v4.accepted()).toBe(0);
    expect(v6.accepted()).toBe(0);
  });

  it('refuses the literal addresses and local names already when a subscription is created', () => {
    const literalOrLocal = forbiddenUrls(v4.port).filter((u) => !Object.keys(zone).some((name) => u.includes(`//${name}:`)));
    for (const url of literalOrLocal) expect(() => checkWebhookUrl(url)).toThrow();
    expect(() => checkWebhookUrl('http://example.com/hook')).toThrow(/https/);
    expect(() => checkWebhookUrl('https://user:pass@example.com/hook')).toThrow(/credentials/);
    expect(checkWebhookUrl('https://hooks.example.com/lore').hostname).toBe('hooks.example.com');
  });

  it('does not follow redirects, so a receiver cannot bounce a delivery to a forbidden address', async () => {
    // Loopback is allowed for this client only so that the redirecting receiver itself can be reached.
    const client = new WebhookHttpClient({ guard: new TargetGuard({ allowLoopback: true }), timeoutMs: 2000, extraCaPem: pki.caPem });
    const targets = [
      `https://127.0.0.1:${v4.port}/`,
      `https://[::1]:${v4.port}/`,
      `http://127.0.0.1:${v4.port}/`,
      'http://169.254.169.254/latest/meta-data/',
      `https://localhost:${v4.port}/`,
      'https://10.0.0.1/',
      `https://2130706433:${v4.port}/`,
    ];
    const before = receiver.requests.length;
    for (const [i, target] of targets.entries()) {
      const r = await client.send({
        url: `https://127.0.0.1:${receiver.port}/redirect/${encodeURIComponent(target)}`,
        body: '{}',
        headers: { 'x-variant': String(i) },
      });
      expect(r.outcome).toBe('redirect');
      expect(r.error).toMatch(/not followed/);
    }
    client.close();
    expect(receiver.requests.length - before).toBe(targets.length);
    expect(v4.accepted()).toBe(0);
    expect(v6.accepted()).toBe(0);
  });

  it('pins the connection to the address it checked: a second DNS answer cannot redirect it (no rebinding window)', async () => {
    let calls = 0;
    // First answer: the receiver (allowed here as loopback); every later answer: a private address.
    const rebinding: HostLookup = async () => {
      calls += 1;
      return [{ address: calls === 1 ? '127.0.0.1' : '10.0.0.1', family: 4 }];
    };
    const client = new WebhookHttpClient({ guard: new TargetGuard({ allowLoopback: true, lookup: rebinding }), timeoutMs: 2000, extraCaPem: pki.caPem });
    tlsConnects.mockClear();
    const before = receiver.requests.length;
    const first = await client.send({ url: `https://receiver.lore.test:${receiver.port}/plain`, body: '{}', headers: {} });
    // The receiver answers 3xx; what matters is that the one connection reached the checked address.
    expect(first.outcome).toBe('redirect');
    expect(receiver.requests.length - before).toBe(1);
    expect(calls).toBe(1);
    expect(tlsConnects).toHaveBeenCalledTimes(1);
    const second = await client.send({ url: `https://receiver.lore.test:${receiver.port}/plain`, body: '{}', headers: {} });
    expect(second.outcome).toBe('refused');
    expect(calls).toBe(2);
    expect(tlsConnects).toHaveBeenCalledTimes(1);
    expect(receiver.requests.length - before).toBe(1);
    client.close();
  });
});
