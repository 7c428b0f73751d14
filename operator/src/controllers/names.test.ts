import { PLATFORM_NAME_MAX, dnsLabel, hostnameProblem, ingressNameFor, memoryHostname, memoryIdFor, platformName } from './names';

describe('names', () => {
  it('defaults the hostname to <name>-<namespace>.<baseDomain>', () => {
    expect(memoryHostname(undefined, 'notes', 'team', 'mem.example.com')).toBe('notes-team.mem.example.com');
    expect(memoryHostname({ hostname: 'kb.acme.io' }, 'notes', 'team', 'mem.example.com')).toBe('kb.acme.io');
  });

  it('lets a Memory name its own default hostname or any host of a listed domain, and nothing else', () => {
    const ok = (host: string, domains: string[] = []) => hostnameProblem(host, 'wiki', 'team-a', 'mem.example.com', domains) === null;
    expect(ok('wiki-team-a.mem.example.com')).toBe(true);
    expect(ok('kb.acme.io', ['acme.io'])).toBe(true);
    expect(ok('deep.kb.acme.io', ['acme.io'])).toBe(true);
    // Another name of its namespace's shape (ambiguous: `docs-team-a` is also `docs` of namespace `team-a`… or of
    // `a`), another namespace's default, the gateway's own host, a deeper name, another domain, the listed domain itself.
    for (const host of ['docs-team-a.mem.example.com', 'wiki-team-b.mem.example.com', 'lore.example.com', 'api.mem.example.com', 'x.wiki-team-a.mem.example.com', 'lore-gateway.lore.svc', 'kb.acme.io', 'acme.io']) {
      expect({ host, ok: ok(host, host === 'acme.io' ? ['acme.io'] : []) }).toEqual({ host, ok: false });
    }
    expect(hostnameProblem('lore.example.com', 'wiki', 'team-a', 'mem.example.com', ['acme.io'])).toMatch(/under acme\.io, or none \(the default wiki-team-a\.mem\.example\.com\)/);
  });

  it('fits names made from long object names into the platform\'s 200 characters, keeping distinct ones distinct', () => {
    expect(platformName('k8s ', 'team', 'notes')).toBe('k8s team/notes');
    const a = platformName('', 'team', 'n'.repeat(253));
    const b = platformName('', 'team', `${'n'.repeat(252)}m`);
    expect([a.length, b.length]).toEqual([PLATFORM_NAME_MAX, PLATFORM_NAME_MAX]);
    expect(a).not.toBe(b);
  });

  it('fits long or dotted names into one DNS label with a hash, keeping distinct inputs distinct', () => {
    const long = dnsLabel(`${'a'.repeat(60)}-${'b'.repeat(20)}`);
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long).toMatch(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/);
    expect(dnsLabel(`${'a'.repeat(60)}-${'c'.repeat(20)}`)).not.toBe(long);
    const dotted = dnsLabel('v1.notes-team');
    expect(dotted).not.toContain('.');
    expect(dotted).not.toBe(dnsLabel('v1-notes-team'));
    expect(dnsLabel('plain-name')).toBe('plain-name');
  });

  it('derives stable platform ids and Ingress names of at most 63 characters', () => {
    expect(memoryIdFor('0f8fad5b-d9cb-469f-a165-70867728950e')).toBe('mem_0f8fad5bd9cb469fa16570867728950e');
    const name = ingressNameFor('a-very-long-namespace-name-for-testing', 'an-equally-long-memory-name-here', 'uid-1');
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name).toMatch(/^mem-a-very-long/);
    expect(ingressNameFor('ns', 'm', 'uid-1')).not.toBe(ingressNameFor('ns', 'm', 'uid-2'));
  });
});
