import { escapeHtml, renderCompanyOverviewHtml } from './company-overview-html';

describe('the HTML of a company overview', () => {
  it('renders every field of an overview', () => {
    const html = renderCompanyOverviewHtml({
      company_name: 'Acme Robotics',
      website: 'https://acme.example/',
      description: 'Industrial robots.',
      industry: 'Robotics',
      headquarters: 'Munich, Germany',
      founded: '2011',
      products: ['Acme Arm', 'Acme Pilot'],
      key_people: [{ name: 'Ada Brook', title: 'CEO' }, { name: 'Omar Haddad', title: '' }],
    });
    expect(html).toBe(
      [
        '<article class="company-overview">',
        '<h1>Acme Robotics</h1>',
        '<p class="website"><a href="https://acme.example/" rel="noopener noreferrer nofollow">https://acme.example/</a></p>',
        '<p class="description">Industrial robots.</p>',
        '<dl class="facts"><dt>Industry</dt><dd>Robotics</dd><dt>Headquarters</dt><dd>Munich, Germany</dd><dt>Founded</dt><dd>2011</dd></dl>',
        '<h2>Products</h2><ul class="products"><li>Acme Arm</li><li>Acme Pilot</li></ul>',
        '<h2>Key people</h2><ul class="key-people"><li><span class="name">Ada Brook</span> — <span class="title">CEO</span></li><li><span class="name">Omar Haddad</span></li></ul>',
        '</article>',
      ].join('\n'),
    );
  });

  it('escapes every value: a script, an attribute break-out and a javascript: website come out inert', () => {
    const html = renderCompanyOverviewHtml({
      company_name: '<script>alert(1)</script>',
      website: 'javascript:alert(1)',
      description: '"><img src=x onerror=alert(1)>',
      industry: "O'Reilly & <b>Sons</b>",
      products: ['<script src="//evil.example/x.js"></script>'],
      key_people: [{ name: '<svg onload=alert(1)>', title: '</li><script>x</script>' }],
      '<i>extra</i>': '<u>value</u>',
    });
    expect(html).not.toMatch(/<script|<img|<svg|<b>|<i>|<u>|href="javascript/i);
    expect(html).toContain('<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>');
    expect(html).toContain('<p class="website">javascript:alert(1)</p>');
    expect(html).toContain('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('O&#39;Reilly &amp; &lt;b&gt;Sons&lt;/b&gt;');
    expect(html).toContain('<dt>&lt;i&gt;extra&lt;/i&gt;</dt><dd>&lt;u&gt;value&lt;/u&gt;</dd>');
  });

  it('skips what is not text and clips what is too long', () => {
    const html = renderCompanyOverviewHtml({ company_name: { nested: true }, products: [1, null, { a: 1 }, 'Real'], key_people: 'nobody', founded: 1999, employees: 120, long: 'x'.repeat(20_000) });
    expect(html).toContain('<h1>Company overview</h1>');
    expect(html).toContain('<li>1</li><li>Real</li>');
    expect(html).toContain('<dt>Founded</dt><dd>1999</dd><dt>Employees</dt><dd>120</dd>');
    expect(html).not.toContain('x'.repeat(10_001));
    expect(escapeHtml(`<>&"'`)).toBe('&lt;&gt;&amp;&quot;&#39;');
  });
});
