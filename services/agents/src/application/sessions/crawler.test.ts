import { keywordsOf, rowOfPage, seedUrlsOf } from './crawler';

describe('the crawler', () => {
  it('takes the seed URLs a prompt names, without trailing punctuation, fragments or duplicates', () => {
    expect(seedUrlsOf('Crawl https://a.example/team, then http://b.example/x#top and https://a.example/team.')).toEqual(['https://a.example/team', 'http://b.example/x']);
    expect(seedUrlsOf('no url here; ftp://c.example/ is not one')).toEqual([]);
  });

  it('takes a URL whose host is a bracketed IPv6 address whole (the SSRF guard decides whether it is read)', () => {
    expect(seedUrlsOf('Crawl http://[2001:db8::1]/team and (https://[::1]:8080/about).')).toEqual(['http://[2001:db8::1]/team', 'https://[::1]:8080/about']);
    expect(seedUrlsOf('see [the site](http://[2001:db8::2]) or [http://b.example]')).toEqual(['http://[2001:db8::2]/', 'http://b.example/']);
    expect(keywordsOf('fintech at http://[2001:db8::1]/team')).toEqual(['fintech']);
  });

  it('looks for the prompt\'s words, without its URLs and filler words', () => {
    expect(keywordsOf('Find the fintech companies in Berlin at https://a.example/')).toEqual(['fintech', 'berlin']);
    expect(keywordsOf('crawl')).toEqual([]);
  });

  it('makes a person row from a profile and a company row per site from its facts, each with provenance', () => {
    const at = '2026-11-25T12:00:00.000Z';
    const person = rowOfPage({ url: 'http://a.localhost/team/ann.html', title: 'Ann', text: 'Ann   Lee, CFO', facts: {}, person: { name: 'Ann Lee', title: 'CFO', company: 'A', location: { city: 'Berlin', country: 'Germany' } } }, at);
    expect(person).toEqual({
      entity_key: 'person:http://a.localhost/team/ann.html',
      entity_type: 'person',
      fields: { name: 'Ann Lee', title: 'CFO', company: 'A', location: 'Berlin, Germany', url: 'http://a.localhost/team/ann.html' },
      provenance: { source_url: 'http://a.localhost/team/ann.html', fetched_at: at, snippet: 'Ann Lee, CFO' },
    });
    const company = rowOfPage({ url: 'http://A.localhost/about.html', title: 'A', text: 'A makes payments', facts: { name: 'A', industry: 'Fintech' }, person: null }, at);
    expect(company).toMatchObject({ entity_key: 'company:a.localhost', entity_type: 'company', fields: { name: 'A', industry: 'Fintech', url: 'http://a.localhost/' } });
    expect(rowOfPage({ url: 'http://a.localhost/x', title: '', text: 'nothing', facts: {}, person: null }, at)).toBeNull();
  });
});
