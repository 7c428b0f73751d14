import { identityKey, normalizeDomain, normalizeProfileUrl, recordIdOf } from './directory-records';

describe('directory record identity', () => {
  it('normalises domains from websites, addresses and bare hosts', () => {
    expect(normalizeDomain('https://www.Acme.de/about?x=1')).toBe('acme.de');
    expect(normalizeDomain('acme.de')).toBe('acme.de');
    expect(normalizeDomain('//shop.acme.co.uk:8443/')).toBe('shop.acme.co.uk');
    expect(normalizeDomain('sales@acme.de')).toBe('acme.de');
    expect(normalizeDomain('not a domain')).toBe('');
    expect(normalizeDomain('localhost')).toBe('');
  });

  it('normalises profile URLs', () => {
    expect(normalizeProfileUrl('HTTPS://www.linkedin.com/in/ada/?utm=x')).toBe('linkedin.com/in/ada');
  });

  it('knows a company by its domain or website, a person by profile, name with company, or name with title', () => {
    expect(identityKey('company', { name: 'Acme', website: 'https://acme.de' })).toBe('domain:acme.de');
    expect(identityKey('company', { name: 'Acme', domain: 'ACME.de', website: 'https://other.example' })).toBe('domain:acme.de');
    expect(identityKey('company', { name: 'Acme' })).toBeNull();
    expect(identityKey('person', { name: 'Ada', profile_url: 'https://linkedin.com/in/ada/' })).toBe('profile:linkedin.com/in/ada');
    expect(identityKey('person', { name: ' Ada  Park ', company: 'Acme' })).toBe('name:ada park|acme');
    expect(identityKey('person', { name: 'Ada', company_domain: 'https://acme.de' })).toBe('name:ada|acme.de');
    expect(identityKey('person', { name: 'Ada', title: 'CTO' })).toBe('name:ada|title:cto');
    expect(identityKey('person', { name: 'Ada' })).toBeNull();
  });

  it('derives a stable id per kind', () => {
    expect(recordIdOf('company', 'domain:acme.de')).toMatch(/^[0-9a-f]{32}$/);
    expect(recordIdOf('company', 'domain:acme.de')).toBe(recordIdOf('company', 'domain:acme.de'));
    expect(recordIdOf('person', 'domain:acme.de')).not.toBe(recordIdOf('company', 'domain:acme.de'));
  });
});
