import { absoluteUrl, decodePage, plainTextTitle, readHtml, robotsDirectives, scanTags, sniffMetaCharset, titleFromUrl } from './web-page';

describe('reading a page', () => {
  const page = 'https://site.test/docs/guide/intro.html';

  it('finds links in every spelling, resolved against the page, fragments removed, http(s) only', () => {
    const html = [
      '<a href="next.html#part">Next</a>',
      '<A HREF="/root.html">Root</A>',
      "<a href='../up.html'>Up</a>",
      '<a href=bare.html>Bare</a>',
      '<a href=" padded.html ">Padded</a>',
      '<a href="q.html?a=1&amp;b=2">Query</a>',
      '<a href="//cdn.test/x.html">Protocol-relative</a>',
      '<a href="mailto:a@b.c">Mail</a><a href="javascript:void(0)">Script</a><a>No address</a>',
      '<a rel="sponsored nofollow" href="paid.html">Paid</a>',
      '<area href="map.html">',
    ].join('\n');
    expect(readHtml(html, page, 'LoreBot').links).toEqual([
      { url: 'https://site.test/docs/guide/next.html', nofollow: false },
      { url: 'https://site.test/root.html', nofollow: false },
      { url: 'https://site.test/docs/up.html', nofollow: false },
      { url: 'https://site.test/docs/guide/bare.html', nofollow: false },
      { url: 'https://site.test/docs/guide/padded.html', nofollow: false },
      { url: 'https://site.test/docs/guide/q.html?a=1&b=2', nofollow: false },
      { url: 'https://cdn.test/x.html', nofollow: false },
      { url: 'https://site.test/docs/guide/paid.html', nofollow: true },
      { url: 'https://site.test/docs/guide/map.html', nofollow: false },
    ]);
  });

  it('ignores links inside comments, scripts, styles and templates, and honours the first <base href>', () => {
    const html = [
      '<head><base href="https://site.test/other/"><base href="https://evil.test/"></head>',
      '<!-- <a href="commented.html">x</a> -->',
      '<script>document.write(\'<a href="scripted.html">x</a>\')</script>',
      '<style>a[href="styled.html"]{}</style>',
      '<template><a href="templated.html">x</a></template>',
      '<a href="kept.html">kept</a>',
    ].join('\n');
    expect(readHtml(html, page, 'LoreBot').links.map((l) => l.url)).toEqual(['https://site.test/other/kept.html']);
  });

  it('reads the canonical link, the language and the robots meta tags meant for it', () => {
    const html =
      '<html lang="de"><head><link rel="canonical" href="/docs/guide/intro.html?print=0"><link rel="canonical" href="/second">' +
      '<meta name="robots" content="noindex"><meta name="LoreBot" content="nofollow"><meta name="otherbot" content="none"></head></html>';
    const facts = readHtml(html, page, 'LoreBot');
    expect(facts.canonical).toBe('https://site.test/docs/guide/intro.html?print=0');
    expect(facts.lang).toBe('de');
    expect(facts.robotsMeta).toEqual(['noindex', 'nofollow']);
    expect(robotsDirectives(facts.robotsMeta, [], 'LoreBot')).toEqual({ noindex: true, nofollow: true });
  });

  it('reads X-Robots-Tag for every crawler and for this one, not for another', () => {
    expect(robotsDirectives([], ['noindex'], 'LoreBot')).toEqual({ noindex: true, nofollow: false });
    expect(robotsDirectives([], ['none'], 'LoreBot')).toEqual({ noindex: true, nofollow: true });
    expect(robotsDirectives([], ['otherbot: noindex, nofollow'], 'LoreBot')).toEqual({ noindex: false, nofollow: false });
    expect(robotsDirectives([], ['otherbot: noindex', 'lorebot: nofollow'], 'LoreBot')).toEqual({ noindex: false, nofollow: true });
    expect(robotsDirectives([], ['unavailable_after: 2030-01-01, noindex'], 'LoreBot')).toEqual({ noindex: true, nofollow: false });
    expect(robotsDirectives(['index, follow'], ['all'], 'LoreBot')).toEqual({ noindex: false, nofollow: false });
  });

  it('scans hostile markup in linear time', () => {
    const started = Date.now();
    for (const unit of ['<!--', '<script>', '<a ', '< ', '<a href="x">', '<title>', '<meta name=robots ']) {
      let visits = 0;
      scanTags(unit.repeat(Math.ceil(2_000_000 / unit.length)), new Set(['a', 'meta']), () => {
        visits += 1;
      });
      expect(visits).toBeGreaterThanOrEqual(0);
    }
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('resolves only http(s) addresses', () => {
    expect(absoluteUrl('x.html#frag', page)).toBe('https://site.test/docs/guide/x.html');
    expect(absoluteUrl('ftp://site.test/x', page)).toBeNull();
    expect(absoluteUrl('http://[bad', page)).toBeNull();
  });
});

describe('charsets', () => {
  const latin1 = Buffer.from('<html><head><meta charset="iso-8859-1"></head><body>Grüße, Café</body></html>', 'latin1');

  it('decodes with the header charset first, then <meta>, then UTF-8', () => {
    expect(decodePage(latin1, 'iso-8859-1', true).text).toContain('Grüße, Café');
    expect(decodePage(latin1, null, true).text).toContain('Grüße, Café');
    // Not HTML: no <meta> is read, so the bytes are UTF-8 (and the Latin-1 ones are not).
    expect(decodePage(latin1, null, false).text).not.toContain('Grüße');
    expect(decodePage(Buffer.from('Καλημέρα', 'utf8'), null, true).text).toBe('Καλημέρα');
  });

  it('lets a byte-order mark win, and ignores charsets the platform does not know', () => {
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('Café', 'utf8')]);
    expect(decodePage(bom, 'iso-8859-1', true).text).toBe('Café');
    expect(decodePage(Buffer.from('Café', 'utf8'), 'x-unknown-charset', false).text).toBe('Café');
  });

  it('finds the charset in <meta http-equiv> as well', () => {
    expect(sniffMetaCharset(Buffer.from('<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'))).toBe('windows-1252');
    expect(sniffMetaCharset(Buffer.from(`${' '.repeat(1100)}<meta charset="iso-8859-1">`))).toBeNull();
  });
});

describe('titles', () => {
  it('takes the first line of plain text, or the last path segment', () => {
    expect(plainTextTitle('\n\n  Release notes  \nbody')).toBe('Release notes');
    expect(plainTextTitle('   \n ')).toBeNull();
    expect(plainTextTitle('x'.repeat(300))).toHaveLength(200);
    expect(titleFromUrl('https://site.test/wiki/Caf%C3%A9')).toBe('Café');
    expect(titleFromUrl('https://site.test/')).toBe('site.test');
  });
});
