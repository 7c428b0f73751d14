import { addressRefusal, checkTargetUrl, checkWebhookUrl, TargetGuard, TargetRefusedError } from './target-guard';

describe('addressRefusal', () => {
  it.each([
    '127.0.0.1', '127.8.9.10', '10.0.0.1', '172.16.5.4', '192.168.10.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.251',
    '255.255.255.255', '240.1.2.3', '198.18.0.1', '192.0.2.55', '168.63.129.16',
    '::1', '::', 'fe80::1', 'fc00::1', 'fd00:ec2::254', 'fec0::1', 'ff05::2', '::ffff:127.0.0.1', '::ffff:10.1.1.1', '::7f00:1',
    '64:ff9b::a00:1', '2002:a00:1::1', '2001:0:4136:e378::1', '2001:db8::1', '100::1',
  ])('refuses %s', (address) => {
    expect(addressRefusal(address)).not.toBeNull();
  });

  it.each(['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700::1111', '2a00:1450:4001::200e', '::ffff:93.184.216.34'])('allows the public address %s', (address) => {
    expect(addressRefusal(address)).toBeNull();
  });

  it('allows loopback only with the test-only switch, and nothing else with it', () => {
    expect(addressRefusal('127.0.0.1', true)).toBeNull();
    expect(addressRefusal('::1', true)).toBeNull();
    expect(addressRefusal('::ffff:127.0.0.1', true)).toBeNull();
    expect(addressRefusal('10.0.0.1', true)).not.toBeNull();
    expect(addressRefusal('169.254.169.254', true)).not.toBeNull();
  });

  it('refuses anything that is not a literal address', () => {
    expect(addressRefusal('example.com')).not.toBeNull();
  });
});

describe('checkWebhookUrl', () => {
  it('accepts public https URLs and keeps path and query', () => {
    expect(checkWebhookUrl('https://hooks.example.com:8443/in?x=1').toString()).toBe('https://hooks.example.com:8443/in?x=1');
  });

  it.each([
    ['http://hooks.example.com/', 'scheme_not_allowed'],
    ['ftp://hooks.example.com/', 'scheme_not_allowed'],
    ['https://u:p@hooks.example.com/', 'credentials_in_url'],
    ['not a url', 'invalid_url'],
    ['https://2130706433/', 'forbidden_address'],
    ['https://[::ffff:7f00:1]/', 'forbidden_address'],
    ['https://foo.localhost/', 'forbidden_name'],
    ['https://intranet/', 'forbidden_name'],
  ])('refuses %s (%s)', (url, reason) => {
    try {
      checkWebhookUrl(url);
      throw new Error('expected a refusal');
    } catch (err) {
      expect(err).toBeInstanceOf(TargetRefusedError);
      expect((err as TargetRefusedError).reason).toBe(reason);
    }
  });
});

describe('checkTargetUrl', () => {
  it('accepts http and https by default and nothing else', () => {
    expect(checkTargetUrl('http://pages.example.com/a').protocol).toBe('http:');
    expect(checkTargetUrl('https://pages.example.com/a').protocol).toBe('https:');
    expect(() => checkTargetUrl('file:///etc/passwd')).toThrow(expect.objectContaining({ reason: 'scheme_not_allowed' }));
    expect(() => checkTargetUrl('gopher://pages.example.com/')).toThrow(expect.objectContaining({ reason: 'scheme_not_allowed' }));
  });

  it('with loopback allowed, accepts plain http for loopback hosts only, even where https is required', () => {
    const policy = { protocols: ['https:'] as const, allowLoopback: true };
    for (const url of ['http://127.0.0.1:9000/hook', 'http://localhost:9000/hook', 'http://[::1]:9000/hook', 'http://hooks.localhost/']) {
      expect(checkTargetUrl(url, policy).href).toBe(new URL(url).href);
    }
    expect(() => checkTargetUrl('http://hooks.example.com/', policy)).toThrow(expect.objectContaining({ reason: 'scheme_not_allowed' }));
    expect(() => checkWebhookUrl('http://127.0.0.1:9000/hook')).toThrow(expect.objectContaining({ reason: 'scheme_not_allowed' }));
  });

  it('never opens private ranges or metadata addresses, whatever the policy', () => {
    const policy = { allowLoopback: true };
    for (const url of ['http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/', 'http://100.64.0.1/', 'http://metadata.google.internal/']) {
      expect(() => checkTargetUrl(url, policy)).toThrow(TargetRefusedError);
    }
  });
});

describe('TargetGuard.resolve', () => {
  it('gives a name up when its resolution takes too long, or when the caller stops waiting', async () => {
    const never = new TargetGuard({ lookup: () => new Promise(() => undefined), lookupTimeoutMs: 50 });
    const started = Date.now();
    const slow = await never.resolve('https://slow-dns.example/').catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(TargetRefusedError);
    expect(slow).toMatchObject({ reason: 'unresolvable', message: 'slow-dns.example does not resolve to an address Lore may reach' });
    expect(Date.now() - started).toBeLessThan(2_000);
    const patient = new TargetGuard({ lookup: () => new Promise(() => undefined), lookupTimeoutMs: 60_000 });
    const deadline = AbortSignal.timeout(50);
    const aborted = await patient.resolve('https://slow-dns.example/', deadline).catch((e: unknown) => e);
    expect(aborted).toBe(deadline.reason);
    expect((aborted as Error).name).toBe('TimeoutError');
    // A prompt answer is unaffected.
    const fast = new TargetGuard({ lookup: async () => [{ address: '93.184.216.34', family: 4 }], lookupTimeoutMs: 50 });
    await expect(fast.resolve('https://fast.example/', AbortSignal.timeout(1_000))).resolves.toMatchObject({ address: '93.184.216.34' });
  });

  it('lets plain http through to a loopback name, pinned to the loopback address whatever the resolver says', async () => {
    const asked: string[] = [];
    // A resolver (a hosts file) that points every name, localhost ones too, at a public address.
    const hostile = new TargetGuard({ protocols: ['https:'], allowLoopback: true, lookup: async (name) => (asked.push(name), [{ address: '93.184.216.34', family: 4 }]) });
    await expect(hostile.resolve('http://localhost:8123/in')).resolves.toMatchObject({ address: '127.0.0.1', port: 8123 });
    // RFC 6761: names under localhost are the loopback address too (many system resolvers do not answer them).
    await expect(hostile.resolve('http://shop.example.localhost:8123/')).resolves.toMatchObject({ address: '127.0.0.1', hostname: 'shop.example.localhost' });
    expect(asked).toEqual([]);
    // Any other name is resolved, and plain http to what it answers is refused.
    await expect(hostile.resolve('http://example.test:8123/in')).rejects.toMatchObject({ reason: 'scheme_not_allowed' });
    // Without the loopback switch a localhost name is refused before any lookup.
    await expect(new TargetGuard({ lookup: async () => [{ address: '127.0.0.1', family: 4 }] }).resolve('http://a.localhost/')).rejects.toBeInstanceOf(TargetRefusedError);
  });

  it('uses the scheme default port', async () => {
    const guard = new TargetGuard({ lookup: async () => [{ address: '93.184.216.34', family: 4 }] });
    await expect(guard.resolve('http://pages.example.com/')).resolves.toMatchObject({ port: 80 });
    await expect(guard.resolve('https://pages.example.com/')).resolves.toMatchObject({ port: 443 });
  });

  it('refuses a name when any of its answers is forbidden and pins the first answer otherwise', async () => {
    const guard = new TargetGuard({
      lookup: async (name) =>
        name === 'mixed.example.com'
          ? [{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.1', family: 4 }]
          : [{ address: '93.184.216.34', family: 4 }, { address: '2606:4700::1111', family: 6 }],
    });
    await expect(guard.resolve('https://mixed.example.com/')).rejects.toMatchObject({ reason: 'forbidden_address' });
    await expect(guard.resolve('https://ok.example.com/x')).resolves.toMatchObject({ address: '93.184.216.34', family: 4, port: 443, hostname: 'ok.example.com' });
  });

  it('treats resolver failures and empty answers as unresolvable', async () => {
    const failing = new TargetGuard({ lookup: async () => Promise.reject(Object.assign(new Error('nope'), { code: 'ENOTFOUND' })) });
    await expect(failing.resolve('https://gone.example.com/')).rejects.toMatchObject({ reason: 'unresolvable' });
    const empty = new TargetGuard({ lookup: async () => [] });
    await expect(empty.resolve('https://empty.example.com/')).rejects.toMatchObject({ reason: 'unresolvable' });
  });

  it('refuses a name that does not resolve and one that points inside in the same words (no DNS oracle)', async () => {
    const guard = new TargetGuard({
      lookup: async (name) => {
        if (name === 'inside.example.com') return [{ address: '10.1.2.3', family: 4 }];
        if (name === 'meta.example.com') return [{ address: '169.254.169.254', family: 4 }];
        if (name === 'empty.example.com') return [];
        throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
      },
    });
    const refusals = await Promise.all(
      ['inside', 'meta', 'empty', 'gone'].map((n) => guard.resolve(`https://${n}.example.com/`).then(() => null, (err: unknown) => err as TargetRefusedError)),
    );
    expect(refusals.map((e) => [e?.reason, e?.byName, e?.message])).toEqual(
      ['inside', 'meta', 'empty', 'gone'].map((n, i) => [i < 2 ? 'forbidden_address' : 'unresolvable', true, `${n}.example.com does not resolve to an address Lore may reach`]),
    );
    // A literal address is the caller's own: its refusal names the class and is not a name's.
    await expect(guard.resolve('https://10.1.2.3/')).rejects.toMatchObject({ reason: 'forbidden_address', byName: false, message: 'IPv4 private address is not allowed' });
  });
});
