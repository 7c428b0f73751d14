import { crawlScope, fileType, hasUnsupportedExtension, inScope, linksToFollow, readableType, readsWhole } from './web-links';

describe('the scope of a web connector', () => {
  it('is the origin, under the directory the base URL names', () => {
    expect(crawlScope('https://docs.example.com/')).toEqual({ origin: 'https://docs.example.com', pathPrefix: '/', exactPath: null });
    expect(crawlScope('https://docs.example.com/guide/')).toEqual({ origin: 'https://docs.example.com', pathPrefix: '/guide/', exactPath: null });
    expect(crawlScope('https://docs.example.com/guide/intro.html')).toEqual({ origin: 'https://docs.example.com', pathPrefix: '/guide/', exactPath: null });
    expect(crawlScope('https://docs.example.com/guide')).toEqual({ origin: 'https://docs.example.com', pathPrefix: '/guide/', exactPath: '/guide' });
  });

  it('keeps other origins, other ports, other schemes and sibling paths out', () => {
    const scope = crawlScope('https://docs.example.com/guide');
    expect(inScope('https://docs.example.com/guide', scope)).toBe(true);
    expect(inScope('https://docs.example.com/guide/a/b.html?x=1', scope)).toBe(true);
    expect(inScope('https://docs.example.com/guidebook', scope)).toBe(false);
    expect(inScope('https://docs.example.com/', scope)).toBe(false);
    expect(inScope('http://docs.example.com/guide/a', scope)).toBe(false);
    expect(inScope('https://docs.example.com:8443/guide/a', scope)).toBe(false);
    expect(inScope('https://www.example.com/guide/a', scope)).toBe(false);
    expect(inScope('not a url', scope)).toBe(false);
  });
});

describe('links a crawl follows', () => {
  const scope = crawlScope('https://site.test/docs/');

  it('drops nofollow links, other origins, paths outside the base, files it does not read, and repeats', () => {
    const links = [
      { url: 'https://site.test/docs/a.html', nofollow: false },
      { url: 'https://site.test/docs/b.html', nofollow: true },
      { url: 'https://site.test/blog/c.html', nofollow: false },
      { url: 'https://other.test/docs/d.html', nofollow: false },
      { url: 'https://site.test/docs/report.PDF', nofollow: false },
      { url: 'https://site.test/docs/logo.png', nofollow: false },
      { url: 'https://site.test/docs/slides.pptx', nofollow: false },
      { url: 'https://site.test/docs/a.html', nofollow: false },
      { url: 'https://site.test/docs/page?x=1', nofollow: false },
      { url: 'https://site.test/docs/notes.txt', nofollow: false },
    ];
    expect(linksToFollow(links, scope, false)).toEqual([
      'https://site.test/docs/a.html',
      'https://site.test/docs/report.PDF',
      'https://site.test/docs/page?x=1',
      'https://site.test/docs/notes.txt',
    ]);
  });

  it('follows nothing from a page that says nofollow', () => {
    expect(linksToFollow([{ url: 'https://site.test/docs/a.html', nofollow: false }], scope, true)).toEqual([]);
  });

  it('reads unsupported extensions from the path only, not the query or a dot in a directory', () => {
    expect(hasUnsupportedExtension('https://site.test/files/pixel.png')).toBe(true);
    expect(hasUnsupportedExtension('https://site.test/view?file=pixel.png')).toBe(false);
    expect(hasUnsupportedExtension('https://site.test/v1.2/guide')).toBe(false);
    expect(hasUnsupportedExtension('https://site.test/.png')).toBe(false);
  });

  it('follows links to the files it reads (PDF, DOCX, CSV, JSON), not to other office files or archives', () => {
    for (const ext of ['pdf', 'docx', 'csv', 'json', 'PDF']) expect(hasUnsupportedExtension(`https://site.test/files/a.${ext}`)).toBe(false);
    for (const ext of ['doc', 'xlsx', 'pptx', 'zip', 'js']) expect(hasUnsupportedExtension(`https://site.test/files/a.${ext}`)).toBe(true);
  });

  it('reads HTML and plain text as pages, nothing else', () => {
    expect(readableType('text/html')).toBe('html');
    expect(readableType('application/xhtml+xml')).toBe('html');
    expect(readableType('text/plain')).toBe('text');
    expect(readableType('text/markdown')).toBe('text');
    for (const t of ['application/pdf', 'image/png', 'application/json', 'application/octet-stream', null]) expect(readableType(t)).toBeNull();
  });

  it('reads PDF, DOCX, CSV and JSON as files, by type, or by extension when the type says nothing', () => {
    expect(fileType('application/pdf', 'https://site.test/report')).toBe('pdf');
    expect(fileType('application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'https://site.test/d')).toBe('docx');
    expect(fileType('text/csv', 'https://site.test/t')).toBe('csv');
    expect(fileType('application/json', 'https://site.test/api/data')).toBe('json');
    expect(fileType('application/octet-stream', 'https://site.test/files/report.PDF')).toBe('pdf');
    expect(fileType(null, 'https://site.test/files/table.csv')).toBe('csv');
    for (const [type, url] of [
      ['application/octet-stream', 'https://site.test/files/archive.zip'],
      ['application/octet-stream', 'https://site.test/download?name=report.pdf'],
      ['text/html', 'https://site.test/report.pdf'],
      ['image/png', 'https://site.test/pixel.png'],
      ['application/zip', 'https://site.test/report.pdf'],
      ['application/msword', 'https://site.test/old.doc'],
    ] as const) {
      expect([type, url, fileType(type, url)]).toEqual([type, url, null]);
    }
    expect(['pdf', 'docx', 'json', 'csv'].map((t) => readsWhole(t as 'pdf'))).toEqual([true, true, true, false]);
  });
});
