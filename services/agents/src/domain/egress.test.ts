import { parseEgressProxies, redactProxyUrl, unconfiguredCountryMessage } from './egress';

describe('parseEgressProxies', () => {
  it('reads cc=url pairs and the JSON object alike', () => {
    const pairs = parseEgressProxies(' de=http://proxy-de:3128 , fr=https://lore:pw@proxy-fr:443 ');
    expect(pairs).toEqual({ proxies: { de: 'http://proxy-de:3128', fr: 'https://lore:pw@proxy-fr:443' }, problems: [] });
    const json = parseEgressProxies('{"de": "http://proxy-de:3128", "us": "http://10.0.0.2:8080"}');
    expect(json).toEqual({ proxies: { de: 'http://proxy-de:3128', us: 'http://10.0.0.2:8080' }, problems: [] });
    expect(parseEgressProxies(undefined)).toEqual({ proxies: {}, problems: [] });
    expect(parseEgressProxies('  ')).toEqual({ proxies: {}, problems: [] });
  });

  it('reports every problem at once, by code, never quoting a URL', () => {
    const r = parseEgressProxies('DE=http://a:1,xx=http://b:2,fr=socks5://u:secret@c:3,it=http://d:4/path,es=not a url,de=http://e:5,de=http://f:6,oops');
    expect(r.proxies).toEqual({ de: 'http://e:5' });
    expect(r.problems).toEqual([
      'entry 8 is not cc=url',
      '"DE" is not a country code of spec 3\'s set (lowercase, two letters)',
      '"xx" is not a country code of spec 3\'s set (lowercase, two letters)',
      'fr: the proxy must be an http:// or https:// proxy, not socks5:',
      'it: the proxy must not have a path, query or fragment',
      'es: the proxy is not a URL',
      'de is given twice',
    ]);
    expect(r.problems.join(' ')).not.toContain('secret');
  });

  it('refuses JSON that is not an object of strings', () => {
    expect(parseEgressProxies('{"de": 3}').problems).toEqual(['de: the proxy must be a URL string']);
    expect(parseEgressProxies('{"de": ').problems).toHaveLength(1);
    expect(parseEgressProxies('{}').proxies).toEqual({});
  });
});

describe('redactProxyUrl and the start message', () => {
  it('hides credentials', () => {
    expect(redactProxyUrl('http://lore:secret@proxy-de:3128')).toBe('http://***@proxy-de:3128');
    expect(redactProxyUrl('http://proxy-de:3128')).toBe('http://proxy-de:3128');
  });

  it('says which countries are configured, or that none are', () => {
    expect(unconfiguredCountryMessage('jp', ['de', 'fr'])).toBe('no egress proxy is configured for "jp" (configured: de, fr)');
    expect(unconfiguredCountryMessage('jp', [])).toMatch(/no egress proxies are configured/);
  });
});
