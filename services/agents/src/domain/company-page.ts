import { cutUnits } from '@lore/ai';
import { closingTag, decodeEntities, htmlTitle, htmlToText, startTags } from '@lore/ai/html-text';

/**
 * Facts about a company from one of its web pages (company overview, and the list builder's web data collection):
 * pure, no fetching. Sources in order of trust, each filling only what the one before left empty:
 * 1. schema.org JSON-LD: the first `Organization` node (or a subtype: Corporation, LocalBusiness, ...), in a
 *    `<script type="application/ld+json">` block, an array or an `@graph`; people from its `founder`, `employee`
 *    and `member`, and from `Person` nodes.
 * 2. OpenGraph and meta tags: `og:site_name` / `og:title`, `og:description` / `description`.
 * 3. The visible text: labelled facts ("Industry: Fintech", or a label line followed by its value as a definition
 *    list reads), sentences ("founded in 2015", "headquartered in Berlin, Germany"), the list under a "Products"
 *    heading, the first paragraph of some length, and lines naming a person and a role ("Ada Brook — Chief
 *    Executive Officer", "Ada Brook, CEO").
 * Everything read is bounded (see the limits below), so a hostile page costs no more than a large one.
 */

export interface KeyPerson {
  name: string;
  title: string;
}

export interface CompanyPageFacts {
  name: string | null;
  description: string | null;
  industry: string | null;
  /** "City, Country" (a country code is written out), or whatever the page says. */
  headquarters: string | null;
  /** A year ("2015") when the page gives a date, else its words. */
  founded: string | null;
  employees: number | null;
  products: string[];
  people: KeyPerson[];
  /** A same-site link to the page most likely to list people (team, leadership, people, about), absolute, or null. */
  peopleLink: string | null;
}

/** Most HTML read per page (characters); the rest is ignored. */
export const MAX_PAGE_CHARS = 2_000_000;
const MAX_LD_BLOCKS = 20;
const MAX_LD_CHARS = 500_000;
const MAX_NODES = 500;
const MAX_PRODUCTS = 30;
const MAX_PEOPLE = 30;
const MAX_FIELD = 1000;
const MAX_DESCRIPTION = 2000;

const ORG_TYPES = new Set([
  'organization', 'corporation', 'localbusiness', 'onlinebusiness', 'onlinestore', 'ngo', 'educationalorganization', 'medicalorganization',
  'governmentorganization', 'newsmediaorganization', 'sportsorganization', 'airline', 'bankorcreditunion', 'financialservice', 'store', 'company',
]);
const ROLE = /\b(?:chief|ceo|cto|cfo|coo|cmo|cio|ciso|cpo|founder|co-founder|cofounder|president|chair(?:man|woman|person)?|vp|vice president|head|director|manager|lead|officer|partner|owner|principal|engineer|designer|executive|associate|advisor|board member|secretary|treasurer|managing)\b/i;
const PERSON_NAME = /^(?:dr\.?\s+|prof\.?\s+)?[\p{Lu}][\p{L}'’.-]+(?:\s+[\p{Lu}][\p{L}'’.-]+){1,3}$/u;

type Json = unknown;
type Node = Record<string, Json>;

const clip = (s: string, n = MAX_FIELD) => (s.length > n ? `${s.slice(0, n - 1).trimEnd()}…` : s);
const tidy = (s: unknown): string | null => {
  if (typeof s !== 'string') return null;
  const t = decodeEntities(s).replace(/\s+/g, ' ').trim();
  return t === '' ? null : t;
};
const asArray = (v: Json): Json[] => (Array.isArray(v) ? v : v === undefined || v === null ? [] : [v]);
const isNode = (v: Json): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);
const typesOf = (n: Node): string[] => asArray(n['@type']).filter((t): t is string => typeof t === 'string').map((t) => t.replace(/^.*[/#:]/, '').toLowerCase());

const LD_TYPE = /\btype\s*=\s*["']?application\/ld\+json\b/i;

/** Every JSON-LD node of the page, arrays and `@graph`s flattened, at most MAX_NODES. */
export function jsonLdNodes(html: string): Node[] {
  const nodes: Node[] = [];
  // Linear scanning (`startTags`, `closingTag`): a lazy regex from every unclosed `<script` read to the page's end.
  let blocks = 0;
  let after = 0;
  for (const tag of startTags(html, 'script')) {
    if (blocks >= MAX_LD_BLOCKS) break;
    if (tag.start < after || !LD_TYPE.test(tag.attrs)) continue;
    const close = closingTag(html, 'script', tag.end);
    // No `</script>` after this one: none after a later one either.
    if (!close) break;
    after = close.end;
    blocks++;
    const raw = html.slice(tag.end, close.start).trim();
    if (raw.length === 0 || raw.length > MAX_LD_CHARS) continue;
    let value: Json;
    try {
      value = JSON.parse(raw.replace(/^<!--|-->$/g, ''));
    } catch {
      continue;
    }
    const queue: Json[] = [value];
    while (queue.length > 0 && nodes.length < MAX_NODES) {
      const v = queue.shift();
      if (Array.isArray(v)) queue.push(...v.slice(0, MAX_NODES));
      else if (isNode(v)) {
        nodes.push(v);
        if (Array.isArray(v['@graph'])) queue.push(...v['@graph'].slice(0, MAX_NODES));
      }
    }
  }
  return nodes;
}

const regionNames = (() => {
  try {
    return new Intl.DisplayNames(['en'], { type: 'region' });
  } catch {
    return null;
  }
})();

/** "DE" → "Germany"; anything else as given. */
function countryName(c: string): string {
  if (/^[A-Z]{2}$/.test(c) && regionNames) {
    try {
      return regionNames.of(c) ?? c;
    } catch {
      return c;
    }
  }
  return c;
}

function addressText(v: Json): string | null {
  for (const a of asArray(v)) {
    if (typeof a === 'string') return tidy(a);
    if (!isNode(a)) continue;
    const city = tidy(a.addressLocality);
    const country = isNode(a.addressCountry) ? tidy(a.addressCountry.name) : tidy(a.addressCountry);
    const parts = [city, country ? countryName(country) : null].filter((p): p is string => p !== null);
    if (parts.length > 0) return parts.join(', ');
    if (isNode(a.address)) return addressText(a.address);
  }
  return null;
}

function yearOf(v: Json): string | null {
  const s = typeof v === 'number' ? String(v) : tidy(v);
  if (!s) return null;
  const m = /^((?:1[5-9]|20)\d{2})(?:-\d{2}(?:-\d{2})?)?(?:T.*)?$/.exec(s);
  return m ? m[1]! : clip(s, 100);
}

function employeesOf(v: Json): number | null {
  const first = asArray(v)[0];
  const n = isNode(first) ? (first.value ?? first.maxValue ?? first.minValue) : first;
  const num = typeof n === 'number' ? n : typeof n === 'string' ? Number(n.replace(/[,\s]/g, '')) : NaN;
  return Number.isFinite(num) && num >= 0 ? Math.round(num) : null;
}

function personOf(v: Json, fallbackTitle: string | null): KeyPerson | null {
  const name = typeof v === 'string' ? tidy(v) : isNode(v) ? tidy(v.name) : null;
  if (!name) return null;
  const title = (isNode(v) ? tidy(v.jobTitle) ?? tidy(v.roleName) : null) ?? fallbackTitle;
  return title ? { name: clip(name, 200), title: clip(title, 200) } : { name: clip(name, 200), title: '' };
}

function productsOf(org: Node): string[] {
  const out: string[] = [];
  for (const offer of asArray(org.makesOffer)) {
    if (!isNode(offer)) continue;
    const item = isNode(offer.itemOffered) ? tidy(offer.itemOffered.name) : tidy(offer.itemOffered);
    const name = item ?? tidy(offer.name);
    if (name) out.push(name);
  }
  const catalog = org.hasOfferCatalog;
  if (isNode(catalog)) {
    for (const el of asArray(catalog.itemListElement)) {
      if (!isNode(el)) continue;
      const name = isNode(el.itemOffered) ? tidy(el.itemOffered.name) : tidy(el.name);
      if (name) out.push(name);
    }
  }
  for (const b of asArray(org.brand)) {
    const name = isNode(b) ? tidy(b.name) : tidy(b);
    if (name) out.push(name);
  }
  return out;
}

interface Partial {
  name?: string | null;
  description?: string | null;
  industry?: string | null;
  headquarters?: string | null;
  founded?: string | null;
  employees?: number | null;
  products?: string[];
  people?: KeyPerson[];
}

function fromJsonLd(html: string): Partial {
  const nodes = jsonLdNodes(html);
  const org = nodes.find((n) => typesOf(n).some((t) => ORG_TYPES.has(t)));
  const people: KeyPerson[] = [];
  const out: Partial = { people, products: [] };
  if (org) {
    out.name = tidy(org.name) ?? tidy(org.legalName);
    out.description = tidy(org.description);
    out.industry = tidy(org.industry) ?? asArray(org.knowsAbout).map(tidy).find((s) => s !== null) ?? null;
    out.headquarters = addressText(org.address) ?? addressText(org.location) ?? addressText(org.foundingLocation);
    out.founded = yearOf(org.foundingDate);
    out.employees = employeesOf(org.numberOfEmployees);
    out.products = productsOf(org);
    for (const f of asArray(org.founder).slice(0, MAX_PEOPLE)) {
      const p = personOf(f, 'Founder');
      if (p) people.push(p);
    }
    for (const key of ['employee', 'employees', 'member', 'members'] as const) {
      for (const e of asArray(org[key]).slice(0, MAX_PEOPLE)) {
        const p = personOf(e, null);
        if (p && p.title) people.push(p);
      }
    }
  }
  for (const n of nodes) {
    if (typesOf(n).includes('person')) {
      const p = personOf(n, null);
      if (p && p.title) people.push(p);
    }
    if (typesOf(n).includes('product')) {
      const name = tidy(n.name);
      if (name) out.products!.push(name);
    }
  }
  return out;
}

function metaContent(html: string, key: string): string | null {
  for (const { attrs: tag } of startTags(html, 'meta')) {
    const k = /\b(?:property|name)\s*=\s*["']([^"']+)["']/i.exec(tag)?.[1];
    if (k?.toLowerCase() !== key) continue;
    const v = /\bcontent\s*=\s*"([^"]*)"|\bcontent\s*=\s*'([^']*)'/i.exec(tag);
    const value = tidy(v?.[1] ?? v?.[2]);
    if (value) return value;
  }
  return null;
}

function fromMeta(html: string, title: string | null): Partial {
  const name = metaContent(html, 'og:site_name') ?? metaContent(html, 'og:title') ?? metaContent(html, 'application-name') ?? (title ? tidy(title.split(/\s+[|–—-]\s+|\s*[|–—]\s*/)[0]) : null);
  return { name, description: metaContent(html, 'og:description') ?? metaContent(html, 'description') };
}

const LABELS: Array<[keyof Partial, RegExp]> = [
  ['industry', /^(?:industry|sector|industries)$/i],
  ['headquarters', /^(?:headquarters|hq|head office|headquartered in|location|based in)$/i],
  ['founded', /^(?:founded|year founded|established|founded in|since)$/i],
  ['employees', /^(?:employees|company size|team size|staff|headcount)$/i],
];

/** Lines of the visible text, list markers and heading marks kept (`- item`, `## Heading`). */
function textLines(html: string): string[] {
  return htmlToText(html).text.split('\n').map((l) => l.trim()).filter((l) => l !== '').slice(0, 5000);
}

export function personFromLine(line: string): KeyPerson | null {
  const l = line.replace(/^[-*•]\s+/, '').trim();
  if (l.length > 160) return null;
  const m = /^(.{3,60}?)\s*(?:[—–|:]|\s-\s|,)\s*(.{2,100})$/.exec(l);
  if (!m) return null;
  const name = m[1]!.trim();
  const title = m[2]!.trim().replace(/[.;]$/, '');
  if (!PERSON_NAME.test(name) || ROLE.test(name) || !ROLE.test(title) || /[.!?]\s/.test(title)) return null;
  return { name, title };
}

function fromText(html: string): Partial {
  return fromLines(textLines(html));
}

function fromLines(lines: string[]): Partial {
  const out: Partial = { products: [], people: [] };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/^#+\s*/, '');
    for (const [field, label] of LABELS) {
      if (out[field] !== undefined && out[field] !== null) continue;
      let value: string | null = null;
      const colon = /^([^:]{2,30}):\s*(.+)$/.exec(line);
      if (colon && label.test(colon[1]!.trim())) value = colon[2]!.trim();
      else if (label.test(line) && i + 1 < lines.length && !lines[i + 1]!.startsWith('#')) value = lines[i + 1]!.replace(/^[-*•]\s+/, '');
      if (value === null) continue;
      if (field === 'employees') out.employees = employeesOf(/\d[\d,]*/.exec(value)?.[0] ?? '');
      else if (field === 'founded') out.founded = /\b((?:1[5-9]|20)\d{2})\b/.exec(value)?.[1] ?? clip(value, 100);
      else out[field] = clip(value, 200) as never;
    }
    if (/^(?:our\s+)?(?:products?|products and services|solutions|offerings)$/i.test(line) && lines[i]!.startsWith('#')) {
      for (let j = i + 1; j < lines.length && !lines[j]!.startsWith('#') && out.products!.length < MAX_PRODUCTS; j++) {
        if (lines[j]!.startsWith('- ')) out.products!.push(clip(lines[j]!.slice(2).trim(), 200));
      }
    }
    const person = personFromLine(lines[i]!);
    if (person) out.people!.push(person);
  }
  const prose = lines.filter((l) => !l.startsWith('#') && !l.startsWith('- ')).join('\n');
  out.founded ??= /\b(?:founded|established|started|launched)\s+(?:in\s+)?((?:1[5-9]|20)\d{2})\b/i.exec(prose)?.[1] ?? null;
  out.headquarters ??= /\b(?:headquartered|headquarters|based|located)\s+in\s+([\p{Lu}][\p{L}.'-]+(?:\s[\p{Lu}][\p{L}.'-]+)*(?:,\s*[\p{Lu}][\p{L}.'-]+(?:\s[\p{Lu}][\p{L}.'-]+)*)?)/u.exec(prose)?.[1]?.replace(/\.+$/, '') ?? null;
  out.description = lines.find((l) => !l.startsWith('#') && !l.startsWith('- ') && l.length >= 40 && /[.!?]$/.test(l)) ?? null;
  return out;
}

const PEOPLE_LINK = /\b(?:team|our-team|people|leadership|management|founders|who-we-are|staff)\b/i;
const ABOUT_LINK = /\b(?:about|about-us|company)\b/i;

const HREF = /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i;

/** The same-site link most likely to list people: team/leadership/people first, then about; absolute, or null. */
export function peopleLinkOf(html: string, pageUrl: string): string | null {
  let base: URL;
  try {
    base = new URL(pageUrl);
  } catch {
    return null;
  }
  let about: string | null = null;
  let n = 0;
  for (const tag of startTags(html, 'a')) {
    if (n >= 2000) break;
    const h = HREF.exec(tag.attrs);
    // A link's text: at most 500 characters up to its `</a>` (only that window is read).
    const close = h ? closingTag(html, 'a', tag.end, 500 + 5) : null;
    if (!h || !close || close.start - tag.end > 500) continue;
    n++;
    const href = decodeEntities((h[1] ?? h[2] ?? h[3] ?? '').trim());
    const text = htmlToText(html.slice(tag.end, close.start)).text;
    let url: URL;
    try {
      url = new URL(href, base);
    } catch {
      continue;
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.host !== base.host) continue;
    url.hash = '';
    if (url.href === base.href || url.pathname === '/') continue;
    const words = `${url.pathname} ${text}`;
    if (PEOPLE_LINK.test(words)) return url.href;
    if (about === null && ABOUT_LINK.test(words)) about = url.href;
  }
  return about;
}

const dedupe = (items: string[], max: number) => {
  const seen = new Set<string>();
  return items.filter((s) => {
    const k = s.toLowerCase();
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  }).slice(0, max);
};

/** People by name (first title kept, a title filling an empty one), at most MAX_PEOPLE. */
export function mergePeople(...lists: KeyPerson[][]): KeyPerson[] {
  const byName = new Map<string, KeyPerson>();
  for (const p of lists.flat()) {
    const k = p.name.toLowerCase();
    const had = byName.get(k);
    if (!had) byName.set(k, { ...p });
    else if (!had.title && p.title) had.title = p.title;
  }
  return [...byName.values()].slice(0, MAX_PEOPLE);
}

/** The facts one page gives, structured data first, then meta tags, then the visible text. */
export function extractCompanyFacts(rawHtml: string, pageUrl: string): CompanyPageFacts {
  const html = rawHtml.length > MAX_PAGE_CHARS ? cutUnits(rawHtml, MAX_PAGE_CHARS) : rawHtml;
  const title = htmlTitle(html);
  const sources = [fromJsonLd(html), fromMeta(html, title), fromText(html)];
  const first = <K extends keyof Partial>(k: K): NonNullable<Partial[K]> | null => {
    for (const s of sources) {
      const v = s[k];
      if (v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0)) return v as NonNullable<Partial[K]>;
    }
    return null;
  };
  const description = first('description');
  return {
    name: first('name'),
    description: description === null ? null : clip(description, MAX_DESCRIPTION),
    industry: first('industry'),
    headquarters: first('headquarters'),
    founded: first('founded'),
    employees: first('employees'),
    products: dedupe(first('products') ?? [], MAX_PRODUCTS),
    people: mergePeople(...sources.map((s) => (s.people ?? []).filter((p) => p.title !== ''))),
    peopleLink: peopleLinkOf(html, pageUrl),
  };
}

/** What a document states beside a company page's facts: the company's website (absolute, http(s)), when it says. */
export interface CompanyTextFacts extends CompanyPageFacts {
  website: string | null;
}

const NAME_LABEL = /^(?:company|company name|organi[sz]ation|name)\s*:\s*(.{2,120})$/i;
const WEBSITE_LABEL = /^(?:website|web site|web|homepage|home page|url|domain|site)\s*:\s*(\S{3,300})$/i;

const COMPANY_LABEL_WORDS = 'company|company name|organi[sz]ation|website|web site|homepage|home page|url|domain|industry|industries|sector|headquarters|hq|head office|location|founded|year founded|established|employees|company size|team size|staff|headcount';
const PERSON_LABEL_WORDS = 'name|full name|title|job title|role|position|company|employer|organi[sz]ation|works at|location|based in|city|e-?mail|email address|website|company website|domain|homepage';

/**
 * Text whose lines a retrieval joined (a memory's chunk keeps words, not line breaks) with each known `Label:` on a
 * line of its own again, so "Company: Finovo Industry: Fintech" reads as two labelled facts.
 */
function labelLines(text: string, labels: string): string {
  return text.replace(new RegExp(`[ \\t]+(?=(?:${labels})\\s*:\\s)`, 'gi'), '\n');
}

/** A website as an absolute http(s) URL ("acme.example" becomes "https://acme.example/"), or null. */
function websiteOf(v: string): string | null {
  const raw = v.replace(/[<>()[\],;]+$/g, '').replace(/^<|>$/g, '');
  try {
    const u = new URL(/^https?:\/\//i.test(raw) ? raw : `https://${raw}`);
    return /^https?:$/.test(u.protocol) && u.hostname.includes('.') ? u.toString() : null;
  } catch {
    return null;
  }
}

/**
 * The facts a text document about a company gives (the list builder's tenant knowledge: a memory's document or a
 * connector's, plain text or markdown): the same labelled facts and sentences as a page's visible text, and besides
 * them the company's name (a `Company:` / `Name:` line, else the document's title, else its first heading) and its
 * website (a `Website:` / `Domain:` line, else the first web address in the text). Bounded like a page.
 */
export function extractCompanyFactsFromText(rawText: string, title: string | null): CompanyTextFacts {
  const text = labelLines(rawText.length > MAX_PAGE_CHARS ? cutUnits(rawText, MAX_PAGE_CHARS) : rawText, COMPANY_LABEL_WORDS);
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l !== '').slice(0, 5000);
  const facts = fromLines(lines);
  let name: string | null = null;
  let website: string | null = null;
  for (const l of lines) {
    const line = l.replace(/^[-*•#]+\s*/, '');
    name ??= tidy(NAME_LABEL.exec(line)?.[1]);
    if (website === null) {
      const w = WEBSITE_LABEL.exec(line)?.[1];
      if (w) website = websiteOf(w);
    }
  }
  const heading = lines.find((l) => /^#\s+\S/.test(l))?.replace(/^#+\s*/, '') ?? null;
  name ??= tidy(title?.split(/\s+[|–—-]\s+|\s*[|–—]\s*/)[0]) ?? tidy(heading);
  website ??= (() => {
    const m = /\bhttps?:\/\/[^\s<>()"']+/i.exec(text);
    return m ? websiteOf(m[0]) : null;
  })();
  return {
    name: name === null ? null : clip(name, 200),
    description: facts.description ? clip(facts.description, MAX_DESCRIPTION) : null,
    industry: facts.industry ?? null,
    headquarters: facts.headquarters ?? null,
    founded: facts.founded ?? null,
    employees: facts.employees ?? null,
    products: dedupe(facts.products ?? [], MAX_PRODUCTS),
    people: mergePeople((facts.people ?? []).filter((p) => p.title !== '')),
    peopleLink: null,
    website,
  };
}

const PERSON_LABELS: Array<[string, RegExp]> = [
  ['name', /^(?:name|full name|person|contact)$/i],
  ['title', /^(?:title|job title|role|position)$/i],
  ['company', /^(?:company|employer|organi[sz]ation|works at)$/i],
  ['location', /^(?:location|based in|city)$/i],
  ['email', /^(?:e-?mail|email address)$/i],
  ['website', /^(?:website|company website|domain|homepage)$/i],
];

/**
 * The person a text document describes (a profile, a contact note), in the directory's field shape: labelled lines
 * (`Name:`, `Title:` / `Role:`, `Company:`, `Location:`, `Email:`, `Website:`), else a line naming a person and a role
 * ("Ada Brook — Chief Executive Officer"). The employer's domain comes from the website or the e-mail address. Null
 * without a name and a title.
 */
export function extractPersonFactsFromText(rawText: string, title: string | null): Record<string, unknown> | null {
  const text = labelLines(rawText.length > MAX_PAGE_CHARS ? cutUnits(rawText, MAX_PAGE_CHARS) : rawText, PERSON_LABEL_WORDS);
  const lines = text.split('\n').map((l) => l.trim().replace(/^[-*•#]+\s*/, '')).filter((l) => l !== '').slice(0, 5000);
  const got: Record<string, string> = {};
  for (const line of lines) {
    const m = /^([^:]{2,30}):\s*(.{1,300})$/.exec(line);
    if (!m) continue;
    for (const [field, label] of PERSON_LABELS) if (got[field] === undefined && label.test(m[1]!.trim())) got[field] = tidy(m[2]) ?? '';
  }
  if (!got.name || !got.title) {
    const line = lines.map(personFromLine).find((p) => p !== null) ?? null;
    if (line) {
      got.name ||= line.name;
      got.title ||= line.title;
    }
  }
  got.name ||= (title ? tidy(title.split(/\s+[|–—-]\s+|\s*[|–—]\s*/)[0]) : null) ?? '';
  if (!got.name || !got.title || !PERSON_NAME.test(got.name)) return null;
  const out: Record<string, unknown> = { name: clip(got.name, 200), title: clip(got.title, 200) };
  if (got.company) out.company = clip(got.company, 200);
  if (got.location) out.location = clip(got.location, 200);
  if (got.email && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(got.email)) out.email = got.email.toLowerCase();
  const site = got.website ? websiteOf(got.website) : null;
  const domain = site ? new URL(site).hostname.toLowerCase().replace(/^www\./, '') : typeof out.email === 'string' ? out.email.split('@')[1]! : null;
  if (domain) out.company_domain = domain;
  return out;
}
