import { parseLastmod, parseSitemap, parseTextSitemap } from './sitemap';

describe('sitemaps', () => {
  it('reads a urlset: loc and lastmod of each url, entities and CDATA decoded, entries without loc dropped', () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://site.test/a.html</loc><lastmod>2026-03-02T09:00:00+00:00</lastmod><priority>0.5</priority></url>
  <url>
    <loc> https://site.test/b?x=1&amp;y=2 </loc>
  </url>
  <url><loc><![CDATA[https://site.test/c?x=1&y=2]]></loc><lastmod>2026-03-01</lastmod></url>
  <url><lastmod>2026-03-01</lastmod></url>
  <url><loc>https://site.test/d.html</loc><lastmod>yesterday</lastmod></url>
</urlset>`;
    const parsed = parseSitemap(xml)!;
    expect(parsed.kind).toBe('urlset');
    expect(parsed.entries.map((e) => [e.loc, e.lastmod?.toISOString() ?? null])).toEqual([
      ['https://site.test/a.html', '2026-03-02T09:00:00.000Z'],
      ['https://site.test/b?x=1&y=2', null],
      ['https://site.test/c?x=1&y=2', '2026-03-01T00:00:00.000Z'],
      ['https://site.test/d.html', null],
    ]);
  });

  it('reads a sitemap index, with namespace prefixes', () => {
    const xml = `<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sm:sitemap><sm:loc>https://site.test/posts.xml</sm:loc><sm:lastmod>2026-02-01T10:00:00Z</sm:lastmod></sm:sitemap>
  <sm:sitemap><sm:loc>https://site.test/pages.xml.gz</sm:loc></sm:sitemap>
</sm:sitemapindex>`;
    const parsed = parseSitemap(xml)!;
    expect(parsed.kind).toBe('sitemapindex');
    expect(parsed.entries.map((e) => e.loc)).toEqual(['https://site.test/posts.xml', 'https://site.test/pages.xml.gz']);
  });

  it('is not fooled by <urlset> containing <url>, stops at an unclosed entry, and bounds the entries', () => {
    expect(parseSitemap('<html><body>not a sitemap</body></html>')).toBeNull();
    expect(parseSitemap('<urlset><url><loc>https://a.test/1</loc></url><url><loc>https://a.test/2</loc>')!.entries.map((e) => e.loc)).toEqual(['https://a.test/1']);
    const many = `<urlset>${'<url><loc>https://a.test/x</loc></url>'.repeat(20)}</urlset>`;
    expect(parseSitemap(many, 5)!.entries).toHaveLength(5);
  });

  it('reads megabytes of unclosed elements in linear time', () => {
    const started = Date.now();
    for (const unit of ['<url>', '<url ', '<loc>', '<urlset><url><loc>']) parseSitemap(`<urlset>${unit.repeat(Math.ceil(2_000_000 / unit.length))}`);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('reads a plain text sitemap: one absolute http(s) URL a line', () => {
    expect(parseTextSitemap('https://a.test/1\n\n  http://a.test/2  \nftp://a.test/3\nnot a url\n/relative').map((e) => e.loc)).toEqual(['https://a.test/1', 'http://a.test/2']);
  });
});

describe('lastmod', () => {
  it('reads every W3C datetime precision; a date alone covers its whole day (UTC)', () => {
    const iso = (v: string) => {
      const r = parseLastmod(v);
      return r && [r.at.toISOString(), r.latest.toISOString()];
    };
    expect(iso('2026-03-02T09:00:00+00:00')).toEqual(['2026-03-02T09:00:00.000Z', '2026-03-02T09:00:00.000Z']);
    expect(iso('2026-03-02T10:30:15.25+01:00')).toEqual(['2026-03-02T09:30:15.000Z', '2026-03-02T09:30:15.000Z']);
    expect(iso('2026-03-02T09:00Z')).toEqual(['2026-03-02T09:00:00.000Z', '2026-03-02T09:00:00.000Z']);
    expect(iso('2026-03-02T09:00:00')).toEqual(['2026-03-02T09:00:00.000Z', '2026-03-02T09:00:00.000Z']);
    expect(iso('2026-03-02')).toEqual(['2026-03-02T00:00:00.000Z', '2026-03-02T23:59:59.999Z']);
    expect(iso('2026-02')).toEqual(['2026-02-01T00:00:00.000Z', '2026-02-28T23:59:59.999Z']);
    expect(iso('2026')).toEqual(['2026-01-01T00:00:00.000Z', '2026-12-31T23:59:59.999Z']);
  });

  it('refuses what is not one', () => {
    for (const v of ['', 'yesterday', '2026-13-01', '2026-02-30', '02/03/2026', '2026-03-02 09:00']) expect(parseLastmod(v)).toBeNull();
  });
});
