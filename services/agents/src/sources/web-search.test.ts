import { ConfiguredOriginGuard, isRetryableSearchError, MAX_RETRY_AFTER_MS, retryAfter, SearxngWebSearch, toResults, WebSearchError } from './web-search';

describe('retryAfter', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  it('reads delta seconds and HTTP dates, bounded, and nothing else', () => {
    expect(retryAfter({ headers: { 'retry-after': '7' } }, now)).toBe(7_000);
    expect(retryAfter({ headers: { 'retry-after': 'Wed, 25 Nov 2026 12:00:30 GMT' } }, now)).toBe(30_000);
    expect(retryAfter({ headers: { 'retry-after': 'Wed, 25 Nov 2026 11:00:00 GMT' } }, now)).toBe(0);
    expect(retryAfter({ headers: { 'retry-after': '999999' } }, now)).toBe(MAX_RETRY_AFTER_MS);
    expect(retryAfter({ headers: { 'retry-after': 'soon' } }, now)).toBeNull();
    expect(retryAfter({ headers: {} }, now)).toBeNull();
  });
});

describe('toResults', () => {
  it('keeps http(s) results once, without fragments, with bounded plain text', () => {
    const results = toResults(
      [
        { url: 'https://a.example/x#frag', title: '<b>A</b>', content: 'x'.repeat(5_000) },
        { url: 'https://a.example/x', title: 'again' },
        { url: 'ftp://b.example/', title: 'ftp' },
        { url: `https://c.example/${'p'.repeat(3_000)}`, title: 'too long' },
        'not an object',
        { url: 'https://d.example/', title: 'D', publishedDate: '2026-05-01' },
      ],
      10,
    );
    expect(results.map((r) => r.url)).toEqual(['https://a.example/x', 'https://d.example/']);
    expect(results[0]!.title).toBe('A');
    expect(results[0]!.snippet).toHaveLength(1_000);
    expect(results[1]!.publishedAt).toBe('2026-05-01T00:00:00.000Z');
  });

  it('stops at the limit', () => {
    const raw = Array.from({ length: 20 }, (_, i) => ({ url: `https://e.example/${i}`, title: String(i) }));
    expect(toResults(raw, 3).map((r) => r.title)).toEqual(['0', '1', '2']);
  });
});

describe('SearxngWebSearch settings', () => {
  it('guards the configured origin only: loopback, private and cluster names allowed, metadata never', async () => {
    const lookup = async (host: string) => {
      if (host === 'searxng.search.svc') return [{ address: '10.0.3.7', family: 4 as const }];
      if (host === 'metadata.example') return [{ address: '169.254.169.254', family: 4 as const }];
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    };
    const cluster = new ConfiguredOriginGuard('http://searxng.search.svc:8080/', lookup);
    expect(await cluster.resolve('http://searxng.search.svc:8080/search?q=x')).toMatchObject({ hostname: 'searxng.search.svc', port: 8080, address: '10.0.3.7', family: 4 });
    // Another origin — another host, port or scheme — is refused, so a redirect cannot lead the client elsewhere.
    await expect(cluster.resolve('http://searxng.search.svc:8081/search')).rejects.toMatchObject({ reason: 'forbidden_name' });
    await expect(cluster.resolve('https://searxng.search.svc:8080/search')).rejects.toMatchObject({ reason: 'forbidden_name' });
    await expect(cluster.resolve('http://169.254.169.254/latest/meta-data')).rejects.toMatchObject({ reason: 'forbidden_name' });
    await expect(new ConfiguredOriginGuard('http://metadata.example/', lookup).resolve('http://metadata.example/search')).rejects.toMatchObject({ reason: 'forbidden_address' });
    await expect(new ConfiguredOriginGuard('http://gone.example/', lookup).resolve('http://gone.example/search')).rejects.toMatchObject({ reason: 'unresolvable' });
    for (const literal of ['http://169.254.169.254/', 'http://[::ffff:169.254.169.254]/', 'http://0.0.0.0:8080/', 'http://[fe80::1]/', 'http://224.0.0.1/']) {
      await expect(new ConfiguredOriginGuard(literal).resolve(`${literal}search`)).rejects.toMatchObject({ reason: 'forbidden_address' });
    }
    expect((await new ConfiguredOriginGuard('http://127.0.0.1:8888/').resolve('http://127.0.0.1:8888/search')).address).toBe('127.0.0.1');
    expect((await new ConfiguredOriginGuard('http://[::1]:8888/').resolve('http://[::1]:8888/search')).address).toBe('::1');
    // The connected peer is checked again by the client.
    expect(cluster.isAllowedAddress('10.0.3.7')).toBe(true);
    expect(cluster.isAllowedAddress('169.254.169.254')).toBe(false);
    expect(cluster.isAllowedAddress('::ffff:169.254.169.254')).toBe(false);
    expect(cluster.isAllowedAddress('168.63.129.16')).toBe(false);
  });

  it('refuses an address that is not an http(s) URL as a configuration error', () => {
    expect(() => new SearxngWebSearch({ baseUrl: 'not a url' })).toThrow(WebSearchError);
    expect(() => new SearxngWebSearch({ baseUrl: 'ftp://search.example.org' })).toThrow(/http\(s\)/);
  });

  it('marks only rate limits, unavailability and timeouts as retryable', () => {
    expect(isRetryableSearchError(new WebSearchError('rate_limited', 'x'))).toBe(true);
    expect(isRetryableSearchError(new WebSearchError('unavailable', 'x'))).toBe(true);
    expect(isRetryableSearchError(new WebSearchError('timeout', 'x'))).toBe(true);
    for (const kind of ['misconfigured', 'invalid_query', 'bad_response', 'aborted'] as const) expect(isRetryableSearchError(new WebSearchError(kind, 'x'))).toBe(false);
    expect(isRetryableSearchError(new Error('x'))).toBe(false);
  });
});
