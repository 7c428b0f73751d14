import { extractCompanyFacts, jsonLdNodes, mergePeople, peopleLinkOf, personFromLine } from './company-page';

const URL_ = 'https://acme.example/';

const structured = `<!doctype html><html><head><title>Acme Robotics | Robots for factories</title>
<meta property="og:site_name" content="Acme (from OpenGraph)">
<meta name="description" content="A description from meta.">
<script type="application/ld+json">
{"@context":"https://schema.org","@graph":[
  {"@type":"WebSite","name":"Acme web site"},
  {"@type":["Corporation"],"name":"Acme Robotics","description":"Acme builds industrial robots.","industry":"Robotics",
   "foundingDate":"2011-04-01","numberOfEmployees":{"@type":"QuantitativeValue","value":"1,250"},
   "address":{"@type":"PostalAddress","addressLocality":"Munich","addressCountry":"DE"},
   "founder":[{"@type":"Person","name":"Ada Brook","jobTitle":"Chief Executive Officer"},{"@type":"Person","name":"Omar Haddad"}],
   "makesOffer":[{"@type":"Offer","itemOffered":{"@type":"Product","name":"Acme Arm"}},{"@type":"Offer","name":"Acme Pilot"}]},
  {"@type":"Person","name":"Lena Varga","jobTitle":"CTO"}
]}
</script></head>
<body><nav><a href="/">Home</a> <a href="/about">About</a> <a href="/company/leadership">Leadership</a></nav>
<h1>Acme Robotics</h1><p>Text that is not used because structured data answered.</p>
<dl><dt>Industry</dt><dd>Not this one</dd></dl></body></html>`;

const textOnly = `<!doctype html><html><head><title>Borealis Ledger – Payments</title>
<meta property="og:title" content="Borealis Ledger">
<meta property="og:description" content="Borealis Ledger makes payment software for banks.">
</head><body>
<h1>Borealis Ledger</h1>
<p>We are a small team headquartered in Berlin, Germany, and were founded in 2016 by two engineers.</p>
<dl><dt>Industry</dt><dd>Fintech</dd><dt>Employees</dt><dd>120 (company size 51-200)</dd></dl>
<h2>Products</h2><ul><li>Borealis Pay</li><li>Borealis Wallet</li></ul>
<h2>Team</h2><ul><li><a href="/team/ada.html">Ada Brook</a> — Chief Executive Officer</li><li>Noor Haddad, VP of Sales</li><li>Contact us — we answer fast</li></ul>
<p><a href="https://elsewhere.example/team">Someone else's team</a> <a href="/about-us">About us</a></p>
</body></html>`;

describe('company facts from a page', () => {
  it('reads schema.org JSON-LD first: the organisation in an @graph, its address, founding year, size, products and people', () => {
    const f = extractCompanyFacts(structured, URL_);
    expect(f).toEqual({
      name: 'Acme Robotics',
      description: 'Acme builds industrial robots.',
      industry: 'Robotics',
      headquarters: 'Munich, Germany',
      founded: '2011',
      employees: 1250,
      products: ['Acme Arm', 'Acme Pilot'],
      people: [
        { name: 'Ada Brook', title: 'Chief Executive Officer' },
        { name: 'Omar Haddad', title: 'Founder' },
        { name: 'Lena Varga', title: 'CTO' },
      ],
      peopleLink: 'https://acme.example/company/leadership',
    });
  });

  it('falls back to OpenGraph and meta tags, then the visible text', () => {
    const f = extractCompanyFacts(textOnly, 'https://borealis.example/');
    expect(f).toEqual({
      name: 'Borealis Ledger',
      description: 'Borealis Ledger makes payment software for banks.',
      industry: 'Fintech',
      headquarters: 'Berlin, Germany',
      founded: '2016',
      employees: 120,
      products: ['Borealis Pay', 'Borealis Wallet'],
      people: [
        { name: 'Ada Brook', title: 'Chief Executive Officer' },
        { name: 'Noor Haddad', title: 'VP of Sales' },
      ],
      // The off-site team link is not followed; the same-site team profile link is.
      peopleLink: 'https://borealis.example/team/ada.html',
    });
  });

  it('uses the title when nothing else names the company, and the first real paragraph as description', () => {
    const f = extractCompanyFacts('<html><head><title>Cobalt Works | Home</title></head><body><p>Short.</p><p>Cobalt Works makes things for people who make things.</p></body></html>', URL_);
    expect(f.name).toBe('Cobalt Works');
    expect(f.description).toBe('Cobalt Works makes things for people who make things.');
    expect(f).toMatchObject({ industry: null, headquarters: null, founded: null, employees: null, products: [], people: [], peopleLink: null });
  });

  it('skips JSON-LD it cannot parse and decodes entities', () => {
    const html = `<script type="application/ld+json">{not json</script><script type='application/ld+json'>{"@type":"Organization","name":"Fish &amp; Chips Ltd"}</script>`;
    expect(jsonLdNodes(html)).toHaveLength(1);
    expect(extractCompanyFacts(html, URL_).name).toBe('Fish & Chips Ltd');
  });

  it('reads a person and a role from a line only when it is one', () => {
    expect(personFromLine('- Ada Brook — Chief Executive Officer')).toEqual({ name: 'Ada Brook', title: 'Chief Executive Officer' });
    expect(personFromLine('Ada Brook | Head of Product')).toEqual({ name: 'Ada Brook', title: 'Head of Product' });
    expect(personFromLine('Ada Brook - CTO')).toEqual({ name: 'Ada Brook', title: 'CTO' });
    expect(personFromLine('Contact us — we answer fast')).toBeNull();
    expect(personFromLine('Berlin, Germany')).toBeNull();
    expect(personFromLine('Ada Brook, Chief Executive Officer, leads the company. Meet everyone.')).toBeNull();
  });

  it('prefers a team link to an about link, on the same site only', () => {
    expect(peopleLinkOf('<a href="/about.html">About</a><a href="/team.html">Our team</a>', 'http://x.example/')).toBe('http://x.example/team.html');
    expect(peopleLinkOf('<a href="/about.html">About</a>', 'http://x.example/')).toBe('http://x.example/about.html');
    expect(peopleLinkOf('<a href="https://other.example/team">Team</a><a href="mailto:a@x.example">Team mail</a>', 'http://x.example/')).toBeNull();
  });

  it('merges people by name, keeping the first title', () => {
    expect(mergePeople([{ name: 'Ada Brook', title: 'CEO' }], [{ name: 'ada brook', title: 'Founder' }, { name: 'Omar Haddad', title: 'CTO' }])).toEqual([
      { name: 'Ada Brook', title: 'CEO' },
      { name: 'Omar Haddad', title: 'CTO' },
    ]);
  });

  it('stays fast and bounded on a hostile page', () => {
    const hostile = `<script type="application/ld+json">${'['.repeat(5000)}</script>${'<a href="/x">'.repeat(50_000)}${'<p>Name Name — Chief '.repeat(20_000)}`;
    const started = performance.now();
    const f = extractCompanyFacts(hostile, URL_);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(f.people.length).toBeLessThanOrEqual(30);
  });
});

describe('company facts from a hostile page', () => {
  it('reads a page of 2 MB of unclosed openers in linear time (one overview request used to hold the process for minutes)', () => {
    const started = Date.now();
    for (const unit of ['<meta ', '<title>', '<script type="application/ld+json">', '<a href="/team">', '<a ']) {
      const html = `<html><head><title>Acme</title>${unit.repeat(Math.ceil(2_000_000 / unit.length))}`;
      const facts = extractCompanyFacts(html, 'https://acme.example/');
      expect(facts.name).toBe('Acme');
      expect(jsonLdNodes(html)).toEqual([]);
      expect(peopleLinkOf(html, 'https://acme.example/')).toBeNull();
    }
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('still reads every meta key, JSON-LD block and link of an ordinary page', () => {
    const html = [
      '<html><head><title>Acme &amp; Co</title><meta property="og:description" content="We make anvils.">',
      '<script type="application/ld+json">{"@type":"Organization","name":"Acme Anvils","foundingDate":"1999"}</script>',
      '<script>var x = "<script type=\\"application/ld+json\\">";</script></head>',
      '<body><a href="/about">About us</a> <a href="/team">Our team</a></body></html>',
    ].join('');
    const facts = extractCompanyFacts(html, 'https://acme.example/');
    expect(facts).toMatchObject({ name: 'Acme Anvils', founded: '1999', description: 'We make anvils.' });
    expect(peopleLinkOf(html, 'https://acme.example/')).toBe('https://acme.example/team');
  });
});
