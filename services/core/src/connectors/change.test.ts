import { compareContent, conditionalHeaders, sitemapSaysUnchanged, validatorsFrom } from './change';
import { parseLastmod, type SitemapEntry } from './sitemap';
import { contentHash } from './source';

const entry = (lastmod: string | null): SitemapEntry => {
  const parsed = lastmod === null ? null : parseLastmod(lastmod);
  return { loc: 'https://site.test/a.html', lastmod: parsed?.at ?? null, lastmodLatest: parsed?.latest ?? null };
};

describe('change detection', () => {
  it('asks for a known page with its validators, and for a new one without', () => {
    expect(conditionalHeaders(undefined)).toEqual({});
    expect(conditionalHeaders({ hash: 'h' })).toEqual({});
    expect(conditionalHeaders({ etag: '"abc"', lastModified: 'Mon, 02 Mar 2026 09:00:00 GMT', hash: 'h' })).toEqual({
      'if-none-match': '"abc"',
      'if-modified-since': 'Mon, 02 Mar 2026 09:00:00 GMT',
    });
    expect(conditionalHeaders({ lastModified: 'not a date', hash: 'h' })).toEqual({});
  });

  it('keeps the validators a response gives, and none that could not be sent back', () => {
    expect(validatorsFrom({ etag: 'W/"v1"', 'last-modified': 'Mon, 02 Mar 2026 09:00:00 GMT' }, 'h')).toEqual({ etag: 'W/"v1"', lastModified: 'Mon, 02 Mar 2026 09:00:00 GMT', hash: 'h' });
    expect(validatorsFrom({ 'last-modified': 'garbage' }, 'h')).toEqual({ hash: 'h' });
    expect(validatorsFrom({ etag: 'x'.repeat(600) }, 'h')).toEqual({ hash: 'h' });
  });

  it("trusts a sitemap lastmod against the page's own Last-Modified, on the site's clock", () => {
    const known = { lastModified: 'Mon, 02 Mar 2026 09:00:00 GMT', hash: 'h' };
    // `since` (our clock) is far ahead: the comparison must not use it when the page gave a Last-Modified.
    const since = new Date('2026-11-01T00:00:00Z');
    expect(sitemapSaysUnchanged(entry('2026-03-02T09:00:00+00:00'), known, since)).toBe(true);
    expect(sitemapSaysUnchanged(entry('2026-03-01T12:00:00Z'), known, since)).toBe(true);
    expect(sitemapSaysUnchanged(entry('2026-03-02T10:00:00+00:00'), known, since)).toBe(false);
    // A date alone is the whole day: a page changed later that day is not skipped.
    expect(sitemapSaysUnchanged(entry('2026-03-02'), known, since)).toBe(false);
    expect(sitemapSaysUnchanged(entry('2026-03-01'), known, since)).toBe(true);
  });

  it('falls back to the last run for a page without Last-Modified, and always asks for new pages and entries without lastmod', () => {
    const since = new Date('2026-03-02T09:00:00Z');
    expect(sitemapSaysUnchanged(entry('2026-03-02T08:59:59Z'), { hash: 'h' }, since)).toBe(true);
    expect(sitemapSaysUnchanged(entry('2026-03-02T09:00:01Z'), { hash: 'h' }, since)).toBe(false);
    expect(sitemapSaysUnchanged(entry('2020-01-01'), undefined, since)).toBe(false);
    expect(sitemapSaysUnchanged(entry(null), { hash: 'h' }, since)).toBe(false);
  });

  it('compares content by hash: the same title and text is no change, whatever the markup', () => {
    const hash = contentHash('Title', 'Some text.');
    expect(compareContent(undefined, hash)).toBe('new');
    expect(compareContent({ hash }, contentHash('Title', 'Some text.'))).toBe('unchanged');
    expect(compareContent({ hash }, contentHash('Title', 'Other text.'))).toBe('changed');
    expect(contentHash('a', 'bc')).not.toBe(contentHash('ab', 'c'));
  });
});
