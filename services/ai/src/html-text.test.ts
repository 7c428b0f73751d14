import { closingTag, decodeEntities, htmlPlainText, htmlTitle, htmlToText, startTags } from './html-text';

describe('HTML to text', () => {
  it('keeps headings, paragraphs and list items; drops scripts, styles and comments', () => {
    const { text, title } = htmlToText(
      '<html><head><title>Guide &amp; FAQ</title><style>p{}</style></head><body><!-- x --><h2>Refunds</h2><p>Five&nbsp;days.</p><ul><li>One</li><li>Two</li></ul><script>alert(1)</script></body></html>',
    );
    expect(title).toBe('Guide & FAQ');
    expect(text).toBe('## Refunds\n\nFive days.\n\n- One\n- Two');
  });
});

describe('HTML to text on hostile markup', () => {
  it('keeps what browsers would show around unclosed comments and elements, and a stray `<` in text', () => {
    expect(htmlToText('<p>a < b <i>c</i></p><p>tail <!-- never closed</p>').text).toBe('a < b c\n\ntail <!-- never closed');
    expect(htmlToText('<p>x</p><script>alert(1)').text).toBe('x\n\nalert(1)');
    expect(htmlToText('<script src="a.js"/><p>kept</p><script>gone()</script><p>also kept</p>').text).toBe('kept\n\nalso kept');
    expect(htmlToText('<title>First <b>one</b></title><title>Second</title>').title).toBe('First <b>one</b>');
    expect(htmlToText('<title>never closed <p>body</p>').title).toBeNull();
  });

  it('reads megabytes of unclosed comments, elements and tags in linear time', () => {
    // The former regular expressions rescanned to the end of the input from every unclosed opening: 160 KB of
    // `<!--` took 14 s, so these inputs would take hours; the bound below is a thousand times what they need.
    const started = Date.now();
    for (const unit of ['<!--', '<script>', '<head>', '<a ', '< ', '<title>', '<style/']) {
      const html = unit.repeat(Math.ceil(2_000_000 / unit.length));
      expect(typeof htmlToText(html).text).toBe('string');
    }
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('decodes every named reference of an ASCII character, so an address written with them is read (and masked) as one', () => {
    expect(decodeEntities('zed&commat;example&period;com')).toBe('zed@example.com');
    expect(decodeEntities('&lpar;555&rpar; 0100&colon; &num;7 &lowbar;x&lowbar; &nope; &amp;')).toBe('(555) 0100: #7 _x_ &nope; &');
    expect(htmlToText('<p>Write to zed&commat;example.com</p>').text).toBe('Write to zed@example.com');
  });
});

describe('tag scanning for page facts', () => {
  it('finds start tags, their attributes and their closing tags as a browser would', () => {
    const html = '<META name="x" content="1"><meta/><metadata><a href="/t">Team</a><A HREF=\'/b\'>x</ a ><script type="application/ld+json">{}</SCRIPT >';
    expect([...startTags(html, 'meta')].map((t) => t.attrs)).toEqual([' name="x" content="1"', '/']);
    const links = [...startTags(html, 'a')];
    expect(links.map((t) => t.attrs)).toEqual([' href="/t"', " HREF='/b'"]);
    const close = closingTag(html, 'a', links[0]!.end)!;
    expect(html.slice(links[0]!.end, close.start)).toBe('Team');
    // A window: only that many characters are read.
    expect(closingTag(html, 'a', links[0]!.end, 3)).toBeNull();
    const script = [...startTags(html, 'script')][0]!;
    expect(html.slice(script.end, closingTag(html, 'script', script.end)!.start)).toBe('{}');
    expect(htmlTitle('<title> A &amp; B\n </title>')).toBe('A & B');
    expect(htmlTitle('<title>never closed')).toBeNull();
    expect(htmlPlainText('<head><title>T</title></head><p>One&nbsp;<b>two</b></p><script>x()</script>')).toBe('One two');
  });

  it('reads megabytes of unclosed openers in linear time (the page-fact regexes took minutes)', () => {
    const started = Date.now();
    for (const unit of ['<meta ', '<title>', '<script type="application/ld+json">', '<a href="/x">', '<a ', '<script>']) {
      const html = unit.repeat(Math.ceil(2_000_000 / unit.length));
      let n = 0;
      for (const tag of startTags(html, unit.slice(1).split(/[ >]/)[0]!)) n += tag.end > 0 ? 1 : 0;
      expect(n).toBeGreaterThanOrEqual(0);
      expect(closingTag(html, 'a', 0)).toBeNull();
      expect(typeof htmlPlainText(html)).toBe('string');
      expect(htmlTitle(html)).toBeNull();
    }
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});
