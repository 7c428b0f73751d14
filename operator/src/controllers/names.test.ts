import { dnsLabel, ingressNameFor, memoryHostname, memoryIdFor } from './names';

describe('names', () => {
  it('defaults the hostname to <name>-<namespace>.<baseDomain>', () => {
    expect(memoryHostname(undefined, 'notes', 'team', 'mem.example.com')).toBe('notes-team.mem.example.com');
    expect(memoryHostname({ hostname: 'kb.acme.io' }, 'notes', 'team', 'mem.example.com')).toBe('kb.acme.io');
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
