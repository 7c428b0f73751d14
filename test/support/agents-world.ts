import { createHash } from 'node:crypto';
import { LoopbackWeb, type ExtraSite, type LoopbackWebOptions } from './loopback-web';
import { LoopbackSearch, type LoopbackSearchOptions } from './loopback-search';

/**
 * The agents test world (docs/agents.md, "The test world"): a generated set of companies and people with known
 * attributes, served as company web sites on the loopback web and found through the loopback SearXNG endpoint, so
 * list building, people search, enrichment and company overview can be measured against a ground truth.
 *
 * `generateAgentsWorld(seed)` is pure: the same seed gives the same world (names, attributes, pages), on any
 * machine. Each company has its own site, `http://<slug>.localhost:<port>` (`domain` is `<slug>.localhost`):
 * - `/` home: schema.org JSON-LD `Organization` (name, url, description, industry, address, numberOfEmployees,
 *   foundingDate, founder, makesOffer products), OpenGraph and description meta, and the same facts as visible text
 *   worded as a list prompt words them ("a fintech company in Berlin, Germany, with 120 employees"). Every fifth
 *   company (`structured: false`) has no JSON-LD, only the meta tags and the text.
 * - `/about.html`: the story, the headquarters and the founding year in prose.
 * - `/team.html`: every person, `Name — Title`, linking their profile `/team/<person-slug>.html` (JSON-LD
 *   `Person`: jobTitle, worksFor, address).
 * - robots.txt: every twentieth company (`teamDisallowed: true`) disallows `/team` for every agent.
 * Company names, products and people's names are drawn from made-up syllables and short word lists, so no page
 * mentions another company's industry or city and a search for "fintech Berlin" finds exactly the pages of the
 * fintech companies in Berlin and their people.
 *
 * `matchingCompanies` / `matchingPeople` answer criteria from the ground truth; `listQuality` compares a built list
 * with them (precision, recall). `worldDirectoryRecords` and `worldCsv` give the world as directory records and CSV.
 */

export interface WorldIndustry {
  /** As shown ("Fintech"); lower-cased it is the word a prompt and a search use. */
  name: string;
  /** What such a company makes, for descriptions. */
  makes: string;
  customers: string;
  productNouns: string[];
}

export const WORLD_INDUSTRIES: readonly WorldIndustry[] = [
  { name: 'Fintech', makes: 'payment and banking software', customers: 'banks and online merchants', productNouns: ['Pay', 'Ledger', 'Wallet'] },
  { name: 'SaaS', makes: 'cloud software for everyday office work', customers: 'small and mid-sized teams', productNouns: ['Cloud', 'Suite', 'Desk'] },
  { name: 'Healthcare', makes: 'clinical software and care services', customers: 'hospitals and clinics', productNouns: ['Care', 'Clinic', 'Vitals'] },
  { name: 'Cybersecurity', makes: 'threat detection and identity protection', customers: 'security teams', productNouns: ['Shield', 'Guard', 'Sentinel'] },
  { name: 'Logistics', makes: 'freight planning and delivery tracking', customers: 'shippers and carriers', productNouns: ['Route', 'Freight', 'Dock'] },
  { name: 'Biotech', makes: 'laboratory research tools and therapies', customers: 'research laboratories', productNouns: ['Assay', 'Genome', 'Cell'] },
  { name: 'Edtech', makes: 'learning platforms', customers: 'schools and universities', productNouns: ['Learn', 'Class', 'Tutor'] },
  { name: 'Insurtech', makes: 'insurance pricing and claims software', customers: 'insurers and brokers', productNouns: ['Claims', 'Policy', 'Cover'] },
  { name: 'Gaming', makes: 'online games and game engines', customers: 'players and studios', productNouns: ['Arena', 'Quest', 'Engine'] },
  { name: 'Robotics', makes: 'industrial robots and their control software', customers: 'factories and warehouses', productNouns: ['Arm', 'Pilot', 'Drive'] },
  { name: 'Energy', makes: 'solar and battery storage systems', customers: 'utilities and home owners', productNouns: ['Grid', 'Solar', 'Cell'] },
  { name: 'Retail', makes: 'shop systems and point-of-sale software', customers: 'stores and brands', productNouns: ['Shop', 'Till', 'Shelf'] },
];

export interface WorldCity {
  city: string;
  region: string;
  country: string;
  /** ISO 3166-1 alpha-2. */
  countryCode: string;
}

export const WORLD_CITIES: readonly WorldCity[] = [
  { city: 'Berlin', region: 'Berlin', country: 'Germany', countryCode: 'DE' },
  { city: 'Munich', region: 'Bavaria', country: 'Germany', countryCode: 'DE' },
  { city: 'Hamburg', region: 'Hamburg', country: 'Germany', countryCode: 'DE' },
  { city: 'Paris', region: 'Ile-de-France', country: 'France', countryCode: 'FR' },
  { city: 'Lyon', region: 'Auvergne-Rhone-Alpes', country: 'France', countryCode: 'FR' },
  { city: 'London', region: 'England', country: 'United Kingdom', countryCode: 'GB' },
  { city: 'Manchester', region: 'England', country: 'United Kingdom', countryCode: 'GB' },
  { city: 'Amsterdam', region: 'North Holland', country: 'Netherlands', countryCode: 'NL' },
  { city: 'Stockholm', region: 'Stockholm', country: 'Sweden', countryCode: 'SE' },
  { city: 'Madrid', region: 'Madrid', country: 'Spain', countryCode: 'ES' },
  { city: 'Barcelona', region: 'Catalonia', country: 'Spain', countryCode: 'ES' },
  { city: 'New York', region: 'New York', country: 'United States', countryCode: 'US' },
  { city: 'San Francisco', region: 'California', country: 'United States', countryCode: 'US' },
  { city: 'Austin', region: 'Texas', country: 'United States', countryCode: 'US' },
  { city: 'Toronto', region: 'Ontario', country: 'Canada', countryCode: 'CA' },
];

export type Seniority = 'c_level' | 'vp' | 'director' | 'manager' | 'senior' | 'entry';

/** Titles people hold: title, department, seniority. The first is every company's chief executive. */
export const WORLD_TITLES: ReadonlyArray<{ title: string; department: string; seniority: Seniority }> = [
  { title: 'Chief Executive Officer', department: 'Executive', seniority: 'c_level' },
  { title: 'Chief Technology Officer', department: 'Engineering', seniority: 'c_level' },
  { title: 'Chief Financial Officer', department: 'Finance', seniority: 'c_level' },
  { title: 'Chief Marketing Officer', department: 'Marketing', seniority: 'c_level' },
  { title: 'VP of Sales', department: 'Sales', seniority: 'vp' },
  { title: 'VP of Engineering', department: 'Engineering', seniority: 'vp' },
  { title: 'Head of Marketing', department: 'Marketing', seniority: 'director' },
  { title: 'Director of Operations', department: 'Operations', seniority: 'director' },
  { title: 'Head of Product', department: 'Product', seniority: 'director' },
  { title: 'Engineering Manager', department: 'Engineering', seniority: 'manager' },
  { title: 'Sales Manager', department: 'Sales', seniority: 'manager' },
  { title: 'People Manager', department: 'People', seniority: 'manager' },
  { title: 'Senior Software Engineer', department: 'Engineering', seniority: 'senior' },
  { title: 'Account Executive', department: 'Sales', seniority: 'senior' },
  { title: 'Product Designer', department: 'Product', seniority: 'senior' },
  { title: 'Marketing Associate', department: 'Marketing', seniority: 'entry' },
  { title: 'Software Engineer', department: 'Engineering', seniority: 'entry' },
];

const FIRST_NAMES = ['Ada', 'Ilse', 'Tomas', 'Noor', 'Mira', 'Jonas', 'Lena', 'Omar', 'Sofia', 'Kenji', 'Priya', 'Lucas', 'Elena', 'Malik', 'Hanna', 'Diego', 'Yara', 'Felix', 'Ines', 'Rafael', 'Zoe', 'Anton', 'Leila', 'Marek', 'Clara', 'Tariq', 'Nora', 'Emil', 'Aiko', 'Bruno'];
const LAST_NAMES = ['Brook', 'Marten', 'Reyes', 'Haddad', 'Lindqvist', 'Okafor', 'Varga', 'Moreau', 'Castell', 'Nakamura', 'Iyer', 'Duarte', 'Kowalski', 'Fischer', 'Ahmadi', 'Novak', 'Bianchi', 'Larsen', 'Quinlan', 'Sato', 'Petrov', 'Ferreira', 'Hoffmann', 'Dubois', 'Olsen', 'Rahman', 'Silva', 'Weber', 'Costa', 'Jansen'];
const COMPANY_SUFFIXES = ['Labs', 'Systems', 'Works', 'Group', 'Technologies', 'Analytics', 'Partners', 'Dynamics', 'Networks', 'Studio'];
const SYLLABLES = ['ba', 'ko', 'ri', 'ten', 'mo', 'lu', 'vex', 'sa', 'dor', 'qui', 'zan', 'fel', 'nor', 'bit', 'ara', 'lix', 'pol', 'tar', 'ven', 'ora', 'kel', 'mar', 'sil', 'tro'];

/**
 * Combinations every world holds several of (beyond the random ones), so the prompts tests use have answers worth
 * measuring: "fintech companies in Berlin", "SaaS companies in France", "cybersecurity in London", "healthcare in
 * New York", "robotics in Munich".
 */
const ANCHORS: Array<{ industry: string; cities: string[]; count: number }> = [
  { industry: 'Fintech', cities: ['Berlin'], count: 8 },
  { industry: 'SaaS', cities: ['Paris', 'Lyon'], count: 8 },
  { industry: 'Cybersecurity', cities: ['London'], count: 6 },
  { industry: 'Healthcare', cities: ['New York'], count: 6 },
  { industry: 'Robotics', cities: ['Munich'], count: 5 },
];

export interface WorldCompany {
  /** `company-<n>`, stable for a seed. */
  id: string;
  name: string;
  /** Host label of its site. */
  slug: string;
  /** `<slug>.localhost`. */
  domain: string;
  industry: string;
  city: string;
  region: string;
  country: string;
  countryCode: string;
  employees: number;
  founded: number;
  description: string;
  products: string[];
  /** Whether its home page carries JSON-LD (else only meta tags and text). */
  structured: boolean;
  /** Whether its robots.txt disallows `/team` (its team page and profiles) for every agent. */
  teamDisallowed: boolean;
}

export interface WorldPerson {
  /** `person-<n>`, stable for a seed. */
  id: string;
  name: string;
  slug: string;
  title: string;
  seniority: Seniority;
  department: string;
  companyId: string;
  company: string;
  companyDomain: string;
  city: string;
  region: string;
  country: string;
  countryCode: string;
  /** Path of the profile on the company's site: `/team/<slug>.html`. */
  profilePath: string;
}

export interface AgentsWorld {
  seed: number;
  companies: WorldCompany[];
  people: WorldPerson[];
}

export interface AgentsWorldOptions {
  /** Default 200. Each company has three people (its chief executive and two others): 600 for 200 companies. */
  companies?: number;
}

/** Deterministic numbers from a seed: each draw hashes the seed and a counter (as the loopback web does). */
class Draw {
  private n = 0;
  constructor(private readonly seed: string) {}
  next(): number {
    return createHash('sha256').update(`${this.seed}:${this.n++}`).digest().readUInt32BE(0) / 0x1_0000_0000;
  }
  int(below: number): number {
    return Math.floor(this.next() * below);
  }
  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
}

const cap = (w: string) => w.charAt(0).toUpperCase() + w.slice(1);
const slugOf = (s: string) => s.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

/** The world of `seed`: ~200 companies and three people each, the same for the same seed. */
export function generateAgentsWorld(seed = 1, options: AgentsWorldOptions = {}): AgentsWorld {
  const count = Math.max(1, Math.floor(options.companies ?? 200));
  const draw = new Draw(`agents-world/${seed}`);
  const names = new Set<string>();
  const stem = () => {
    for (;;) {
      const n = cap(Array.from({ length: 2 + draw.int(2) }, () => draw.pick(SYLLABLES)).join(''));
      if (!names.has(n) && n.length <= 10) {
        names.add(n);
        return n;
      }
    }
  };
  const plan: Array<{ industry: WorldIndustry; city: WorldCity }> = [];
  for (const anchor of ANCHORS) {
    for (let i = 0; i < anchor.count && plan.length < count; i++) {
      plan.push({ industry: WORLD_INDUSTRIES.find((x) => x.name === anchor.industry)!, city: WORLD_CITIES.find((c) => c.city === anchor.cities[i % anchor.cities.length])! });
    }
  }
  while (plan.length < count) plan.push({ industry: draw.pick(WORLD_INDUSTRIES), city: draw.pick(WORLD_CITIES) });

  const companies: WorldCompany[] = plan.map(({ industry, city }, i) => {
    const base = stem();
    const name = `${base} ${draw.pick(COMPANY_SUFFIXES)}`;
    // Employees spread over orders of magnitude (5 to ~5,000), as real lists are.
    const employees = Math.round(5 * Math.pow(10, draw.next() * 3));
    const founded = draw.between(1990, 2024);
    const products = Array.from({ length: 1 + draw.int(3) }, (_, k) => `${base} ${industry.productNouns[(k + draw.int(3)) % industry.productNouns.length]!}`);
    const slug = slugOf(base);
    return {
      id: `company-${i + 1}`,
      name,
      slug,
      domain: `${slug}.localhost`,
      industry: industry.name,
      city: city.city,
      region: city.region,
      country: city.country,
      countryCode: city.countryCode,
      employees,
      founded,
      description: `${name} makes ${industry.makes} for ${industry.customers}.`,
      products: [...new Set(products)],
      structured: i % 5 !== 4,
      teamDisallowed: i % 20 === 17,
    };
  });

  const people: WorldPerson[] = [];
  const personNames = new Set<string>();
  const personName = () => {
    for (let tries = 0; ; tries++) {
      const n = `${draw.pick(FIRST_NAMES)} ${draw.pick(LAST_NAMES)}${tries > 50 ? ` ${cap(draw.pick(SYLLABLES))}` : ''}`;
      if (!personNames.has(n)) {
        personNames.add(n);
        return n;
      }
    }
  };
  for (const company of companies) {
    const others = WORLD_TITLES.slice(1);
    const first = draw.int(others.length);
    let second = draw.int(others.length - 1);
    if (second >= first) second += 1;
    for (const role of [WORLD_TITLES[0]!, others[first]!, others[second]!]) {
      const name = personName();
      // One in six works from another city than the company's (remote).
      const city = draw.next() < 1 / 6 ? draw.pick(WORLD_CITIES.filter((c) => c.city !== company.city)) : WORLD_CITIES.find((c) => c.city === company.city)!;
      const slug = slugOf(name);
      people.push({
        id: `person-${people.length + 1}`,
        name,
        slug,
        title: role.title,
        seniority: role.seniority,
        department: role.department,
        companyId: company.id,
        company: company.name,
        companyDomain: company.domain,
        city: city.city,
        region: city.region,
        country: city.country,
        countryCode: city.countryCode,
        profilePath: `/team/${slug}.html`,
      });
    }
  }
  return { seed, companies, people };
}

// ---- the ground truth ----

const norm = (s: string) => s.trim().toLowerCase();
const oneOf = (value: string, wanted: string | string[] | undefined, alt?: string) =>
  wanted === undefined || (Array.isArray(wanted) ? wanted : [wanted]).some((w) => norm(w) === norm(value) || (alt !== undefined && norm(w) === norm(alt)));

export interface CompanyCriteria {
  /** An industry name (case-insensitive), or any of several. */
  industry?: string | string[];
  city?: string | string[];
  /** A country name or its ISO code. */
  country?: string | string[];
  employeesMin?: number;
  employeesMax?: number;
  foundedFrom?: number;
  foundedTo?: number;
}

export interface PersonCriteria {
  title?: string | string[];
  seniority?: Seniority | Seniority[];
  department?: string | string[];
  /** Where the person is. */
  city?: string | string[];
  country?: string | string[];
  /** Their employer matches these. */
  company?: CompanyCriteria;
}

export function companyMatches(c: WorldCompany, k: CompanyCriteria): boolean {
  return (
    oneOf(c.industry, k.industry) &&
    oneOf(c.city, k.city) &&
    oneOf(c.country, k.country, c.countryCode) &&
    (k.employeesMin === undefined || c.employees >= k.employeesMin) &&
    (k.employeesMax === undefined || c.employees <= k.employeesMax) &&
    (k.foundedFrom === undefined || c.founded >= k.foundedFrom) &&
    (k.foundedTo === undefined || c.founded <= k.foundedTo)
  );
}

/** The companies of the world that meet `criteria`, in the world's order. */
export function matchingCompanies(world: AgentsWorld, criteria: CompanyCriteria): WorldCompany[] {
  return world.companies.filter((c) => companyMatches(c, criteria));
}

/** The people of the world that meet `criteria`, in the world's order. */
export function matchingPeople(world: AgentsWorld, criteria: PersonCriteria): WorldPerson[] {
  const byId = new Map(world.companies.map((c) => [c.id, c]));
  return world.people.filter(
    (p) =>
      oneOf(p.title, criteria.title) &&
      oneOf(p.seniority, criteria.seniority) &&
      oneOf(p.department, criteria.department) &&
      oneOf(p.city, criteria.city) &&
      oneOf(p.country, criteria.country, p.countryCode) &&
      (criteria.company === undefined || companyMatches(byId.get(p.companyId)!, criteria.company)),
  );
}

export type WorldCriteria = ({ kind: 'company' } & CompanyCriteria) | ({ kind: 'person' } & PersonCriteria);

/** The ground truth of one criteria set: matching companies or people. */
export function matching(world: AgentsWorld, criteria: WorldCriteria): Array<WorldCompany | WorldPerson> {
  return criteria.kind === 'company' ? matchingCompanies(world, criteria) : matchingPeople(world, criteria);
}

/** The key a built list's record is compared by: a company's domain, a person's name at their company's domain. */
export const companyKey = (c: Pick<WorldCompany, 'domain'>) => norm(c.domain);
export const personKey = (p: { name: string; companyDomain: string }) => `${norm(p.name)}@${norm(p.companyDomain)}`;

export interface ListQuality {
  precision: number;
  recall: number;
  f1: number;
  truePositives: number;
  /** Keys found that the truth does not hold. */
  falsePositives: string[];
  /** Keys of the truth not found. */
  missed: string[];
}

/**
 * Precision and recall of a built list against the truth, both given as keys (`companyKey` / `personKey`);
 * duplicates in `found` count once. An empty list has precision 1 (nothing wrong) and an empty truth recall 1.
 */
export function listQuality(found: Iterable<string>, truth: Iterable<string>): ListQuality {
  const f = new Set([...found].map(norm));
  const t = new Set([...truth].map(norm));
  const tp = [...f].filter((k) => t.has(k)).length;
  const precision = f.size === 0 ? 1 : tp / f.size;
  const recall = t.size === 0 ? 1 : tp / t.size;
  return {
    precision,
    recall,
    f1: precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall),
    truePositives: tp,
    falsePositives: [...f].filter((k) => !t.has(k)),
    missed: [...t].filter((k) => !f.has(k)),
  };
}

// ---- the world as pages ----

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const jsonLd = (value: unknown) => `<script type="application/ld+json">${JSON.stringify(value).replace(/</g, '\\u003c')}</script>`;

function page(p: { title: string; head?: string; body: string }): string {
  return ['<!doctype html>', '<html lang="en">', '<head>', '<meta charset="utf-8">', `<title>${esc(p.title)}</title>`, ...(p.head ? [p.head] : []), '</head>', '<body>', p.body, '</body>', '</html>', ''].join('\n');
}

/** The usual company-size bands: 1-10, 11-50, 51-200, 201-500, 501-1000, 1001-5000, 5001+. */
export function sizeBand(employees: number): string {
  const bands: Array<[number, string]> = [[10, '1-10'], [50, '11-50'], [200, '51-200'], [500, '201-500'], [1000, '501-1000'], [5000, '1001-5000']];
  return bands.find(([max]) => employees <= max)?.[1] ?? '5001+';
}

const NAV = '<nav><a href="/">Home</a> · <a href="/about.html">About us</a> · <a href="/team.html">Our team</a></nav>';

/** The pages of every company's site, for `new LoopbackWeb({ extraSites })`. Site URLs are relative, so any port serves them. */
export function worldSites(world: AgentsWorld): ExtraSite[] {
  const staff = new Map<string, WorldPerson[]>();
  for (const p of world.people) staff.set(p.companyId, [...(staff.get(p.companyId) ?? []), p]);
  return world.companies.map((c, i) => {
    const people = staff.get(c.id) ?? [];
    const ceo = people.find((p) => p.seniority === 'c_level' && p.department === 'Executive');
    const industry = c.industry.toLowerCase() === 'saas' ? 'SaaS' : c.industry.toLowerCase();
    const where = `${c.city}, ${c.country}`;
    const organization = {
      '@context': 'https://schema.org',
      '@type': 'Organization',
      name: c.name,
      url: '/',
      description: c.description,
      industry: c.industry,
      foundingDate: String(c.founded),
      numberOfEmployees: { '@type': 'QuantitativeValue', value: c.employees },
      address: { '@type': 'PostalAddress', addressLocality: c.city, addressRegion: c.region, addressCountry: c.countryCode },
      ...(ceo ? { founder: { '@type': 'Person', name: ceo.name, jobTitle: ceo.title } } : {}),
      makesOffer: c.products.map((name) => ({ '@type': 'Offer', itemOffered: { '@type': 'Product', name } })),
    };
    const meta = [
      `<meta name="description" content="${esc(c.description)}">`,
      `<meta property="og:type" content="website">`,
      `<meta property="og:site_name" content="${esc(c.name)}">`,
      `<meta property="og:title" content="${esc(c.name)}">`,
      `<meta property="og:description" content="${esc(c.description)}">`,
      `<meta name="keywords" content="${esc(`${c.industry}, ${c.city}, ${c.country}`)}">`,
      ...(c.structured ? [jsonLd(organization)] : []),
    ].join('\n');
    const home = page({
      title: `${c.name} | ${c.industry} company in ${c.city}`,
      head: meta,
      body: [
        NAV,
        `<h1>${esc(c.name)}</h1>`,
        `<p>${esc(c.description)} ${esc(c.name)} is a ${esc(industry)} company in ${esc(where)}, with ${c.employees} employees, founded in ${c.founded}: one of the ${esc(industry)} companies in ${esc(c.city)}.</p>`,
        '<h2>Company facts</h2>',
        '<dl>',
        `<dt>Industry</dt><dd>${esc(c.industry)}</dd>`,
        `<dt>Headquarters</dt><dd>${esc(where)}</dd>`,
        `<dt>Employees</dt><dd>${c.employees} (company size ${sizeBand(c.employees)} employees)</dd>`,
        `<dt>Founded</dt><dd>${c.founded}</dd>`,
        '</dl>',
        '<h2>Products</h2>',
        `<ul>${c.products.map((p) => `<li>${esc(p)}</li>`).join('')}</ul>`,
      ].join('\n'),
    });
    const about = page({
      title: `About ${c.name}`,
      head: `<meta name="description" content="${esc(`The story of ${c.name}, ${c.industry} in ${c.city}.`)}">`,
      body: [
        NAV,
        `<h1>About ${esc(c.name)}</h1>`,
        `<p>${esc(c.name)} was founded in ${c.founded} in ${esc(c.city)}. Today ${c.employees} people work for the company from its headquarters in ${esc(where)}.</p>`,
        `<p>${esc(c.description)} Its ${c.products.length === 1 ? 'product is' : 'products are'} ${esc(c.products.join(', '))}.</p>`,
        ceo ? `<p>${esc(ceo.name)}, ${esc(ceo.title)}, leads the company. Meet everyone on <a href="/team.html">our team page</a>.</p>` : '',
      ].join('\n'),
    });
    const team = page({
      title: `Team of ${c.name}`,
      body: [
        NAV,
        `<h1>Our team</h1>`,
        `<p>The people of ${esc(c.name)}, the ${esc(industry)} company in ${esc(c.city)}.</p>`,
        `<ul class="team">${people.map((p) => `<li><a href="${p.profilePath}">${esc(p.name)}</a> — ${esc(p.title)}</li>`).join('\n')}</ul>`,
      ].join('\n'),
    });
    const profiles = people.map((p) => ({
      path: p.profilePath,
      ageDays: 10 + (i % 50),
      html: page({
        title: `${p.name}, ${p.title} at ${c.name}`,
        head: jsonLd({
          '@context': 'https://schema.org',
          '@type': 'Person',
          name: p.name,
          jobTitle: p.title,
          worksFor: { '@type': 'Organization', name: c.name, url: '/' },
          address: { '@type': 'PostalAddress', addressLocality: p.city, addressCountry: p.countryCode },
        }),
        body: [
          NAV,
          `<h1>${esc(p.name)}</h1>`,
          `<p>${esc(p.name)} is ${esc(p.title)} at ${esc(c.name)}, a ${esc(industry)} company in ${esc(c.city)}. ${esc(p.department)} department, based in ${esc(`${p.city}, ${p.country}`)}.</p>`,
        ].join('\n'),
      }),
    }));
    return {
      name: c.slug,
      pages: [
        { path: '/', html: home, ageDays: 5 + (i % 40) },
        { path: '/about.html', html: about, ageDays: 20 + (i % 60) },
        { path: '/team.html', html: team, ageDays: 15 + (i % 30) },
        ...profiles,
      ],
      ...(c.teamDisallowed ? { disallow: ['/team'] } : {}),
    };
  });
}

export interface ServedAgentsWorld {
  world: AgentsWorld;
  web: LoopbackWeb;
  search: LoopbackSearch;
  /** `http://<slug>.localhost:<port>/` of a company. */
  companyUrl(c: WorldCompany): string;
  /** The profile URL of a person. */
  profileUrl(p: WorldPerson): string;
  close(): Promise<void>;
}

/** Starts the loopback web with the world's sites (and the four usual sites) and a SearXNG endpoint over it. */
export async function serveAgentsWorld(
  world: AgentsWorld,
  options: { web?: Omit<LoopbackWebOptions, 'extraSites'>; search?: LoopbackSearchOptions } = {},
): Promise<ServedAgentsWorld> {
  const web = await new LoopbackWeb({ ...options.web, extraSites: worldSites(world) }).start();
  const search = await new LoopbackSearch(web, options.search).start();
  const bySlug = new Map(world.companies.map((c) => [c.id, c.slug]));
  return {
    world,
    web,
    search,
    companyUrl: (c) => `${web.siteUrl(c.slug)}/`,
    profileUrl: (p) => `${web.siteUrl(bySlug.get(p.companyId)!)}${p.profilePath}`,
    close: async () => {
      await search.close();
      await web.close();
    },
  };
}

// ---- the world as directory records and CSV ----

export interface WorldDirectoryRecord {
  id: string;
  kind: 'company' | 'person';
  /** The directory's document (services/agents/src/sources/directory.ts). */
  data: Record<string, unknown>;
  /** The record's URL: a company's site, a person's profile. */
  source: string;
}

/** `http://<domain>[:port]` — with the port of a served world the URLs are fetchable. */
const origin = (domain: string, port?: number) => `http://${domain}${port ? `:${port}` : ''}`;

/** The world as directory records, companies then people, with URLs on `port` when given. */
export function worldDirectoryRecords(world: AgentsWorld, options: { port?: number } = {}): WorldDirectoryRecord[] {
  const companies = world.companies.map((c): WorldDirectoryRecord => {
    const website = `${origin(c.domain, options.port)}/`;
    return {
      id: c.id,
      kind: 'company',
      source: website,
      data: {
        name: c.name,
        domain: c.domain,
        website,
        industry: c.industry,
        description: c.description,
        location: { city: c.city, region: c.region, country: c.countryCode },
        employees: c.employees,
        founded: c.founded,
        tags: [c.industry.toLowerCase(), ...c.products],
      },
    };
  });
  const people = world.people.map((p): WorldDirectoryRecord => {
    const profile = `${origin(p.companyDomain, options.port)}${p.profilePath}`;
    return {
      id: p.id,
      kind: 'person',
      source: profile,
      data: {
        name: p.name,
        title: p.title,
        seniority: p.seniority,
        department: p.department,
        company: p.company,
        company_domain: p.companyDomain,
        location: { city: p.city, region: p.region, country: p.countryCode },
        profile_url: profile,
        email: `${p.slug.replace(/-/g, '.')}@${p.companyDomain}`,
      },
    };
  });
  return [...companies, ...people];
}

const csvField = (v: string | number) => {
  const s = String(v);
  return /[",\n\r;]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** The companies or people of the world as CSV text (a header row, comma-separated, CRLF line ends as RFC 4180). */
export function worldCsv(world: AgentsWorld, kind: 'company' | 'person', options: { port?: number } = {}): string {
  const rows: Array<Array<string | number>> =
    kind === 'company'
      ? [
          ['name', 'domain', 'website', 'industry', 'city', 'country', 'employees', 'founded', 'description', 'products'],
          ...world.companies.map((c) => [c.name, c.domain, `${origin(c.domain, options.port)}/`, c.industry, c.city, c.country, c.employees, c.founded, c.description, c.products.join('; ')]),
        ]
      : [
          ['name', 'title', 'seniority', 'department', 'company', 'company_domain', 'city', 'country', 'profile_url'],
          ...world.people.map((p) => [p.name, p.title, p.seniority, p.department, p.company, p.companyDomain, p.city, p.country, `${origin(p.companyDomain, options.port)}${p.profilePath}`]),
        ];
  return `${rows.map((r) => r.map(csvField).join(',')).join('\r\n')}\r\n`;
}
