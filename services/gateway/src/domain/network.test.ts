import { addressAllowed, clientAddress, clientProto, invalidCidrs, parseCidrList } from './network';

describe('IP allowlists and client addresses', () => {
  const proxies = parseCidrList(['10.0.0.0/8']);

  it('matches IPv4, IPv6 and IPv4-mapped IPv6 addresses against CIDR ranges', () => {
    const list = parseCidrList(['192.168.1.0/24', '2001:db8::/32', '203.0.113.7']);
    expect(addressAllowed('192.168.1.44', list)).toBe(true);
    expect(addressAllowed('::ffff:192.168.1.44', list)).toBe(true);
    expect(addressAllowed('192.168.2.1', list)).toBe(false);
    expect(addressAllowed('2001:db8:1::5', list)).toBe(true);
    expect(addressAllowed('203.0.113.7', list)).toBe(true);
    expect(addressAllowed('203.0.113.8', list)).toBe(false);
    expect(addressAllowed(null, list)).toBe(false);
    expect(addressAllowed('1.2.3.4', [])).toBe(true);
  });

  it('names every invalid range', () => {
    expect(invalidCidrs(['10.0.0.0/8', 'nope', '300.1.1.1/8', '10.0.0.0/33'])).toEqual(['nope', '300.1.1.1/8', '10.0.0.0/33']);
  });

  it('ignores X-Forwarded-For from anyone but a configured proxy', () => {
    expect(clientAddress('198.51.100.9', '1.1.1.1', proxies)).toBe('198.51.100.9');
    expect(clientAddress('198.51.100.9', '1.1.1.1', [])).toBe('198.51.100.9');
  });

  it('walks X-Forwarded-For from the right, past trusted proxies only', () => {
    expect(clientAddress('10.0.0.2', '203.0.113.5', proxies)).toBe('203.0.113.5');
    // A client-written first hop cannot win: the proxy appended the real peer after it.
    expect(clientAddress('10.0.0.2', '192.168.1.1, 203.0.113.5', proxies)).toBe('203.0.113.5');
    expect(clientAddress('10.0.0.2', '203.0.113.5, 10.1.1.1', proxies)).toBe('203.0.113.5');
    expect(clientAddress('::ffff:10.0.0.2', '203.0.113.5', proxies)).toBe('203.0.113.5');
    expect(clientAddress('10.0.0.2', 'garbage', proxies)).toBe('10.0.0.2');
  });

  it('takes the client scheme from X-Forwarded-Proto of a configured proxy only, else from its own connection', () => {
    expect(clientProto('10.0.0.2', 'https', false, proxies)).toBe('https');
    expect(clientProto('10.0.0.2', 'https, http', false, proxies)).toBe('https');
    expect(clientProto('10.0.0.2', ['HTTPS'], false, proxies)).toBe('https');
    // Anyone else's claim is ignored; so is a value that is not a scheme.
    expect(clientProto('198.51.100.9', 'https', false, proxies)).toBe('http');
    expect(clientProto('10.0.0.2', 'https', false, [])).toBe('http');
    expect(clientProto('10.0.0.2', 'gopher', true, proxies)).toBe('https');
    expect(clientProto('10.0.0.2', undefined, false, proxies)).toBe('http');
    expect(clientProto('198.51.100.9', undefined, true, proxies)).toBe('https');
  });
});
