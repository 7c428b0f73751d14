/**
 * The fixed vocabularies list building reads prompts and records with (docs/agents.md, "Criteria and scoring"):
 * industries with their synonyms, places (countries with ISO 3166-1 alpha-2 codes, regions, US states, cities),
 * company size bands, departments, seniority levels and the job functions of people. Both the criteria extractor
 * (a prompt) and the scorer (a record's fields, a page's text) match through the same tables, so a prompt's
 * "fintech" and a record's "Financial technology" meet at one id.
 *
 * Patterns are regular-expression fragments matched case-insensitively between word boundaries (letters and digits);
 * a fragment listed in `exact` is matched as written (case-sensitive: "US", "LA", never the pronoun "us").
 */

export interface Term {
  /** Stable id (industries, seniority, departments) or ISO code (countries). */
  id: string;
  label: string;
  /** Regular-expression fragments, case-insensitive. */
  patterns: string[];
  /** Fragments matched case-sensitively. */
  exact?: string[];
}

// ---------------------------------------------------------------------------------------------------------------
// Industries

export interface Industry extends Term {
  /** A broader industry this one belongs to: asking for the parent accepts this one ("software" accepts SaaS). */
  parent?: string;
}

export const INDUSTRIES: readonly Industry[] = [
  { id: 'software', label: 'Software', patterns: ['software', 'enterprise software', 'software vendors?', 'software houses?'] },
  { id: 'saas', label: 'SaaS', parent: 'software', patterns: ['saas', 'software[\\s-]as[\\s-]a[\\s-]service', 'b2b software', 'cloud software', 'subscription software'] },
  { id: 'devtools', label: 'Developer tools', parent: 'software', patterns: ['developer tools?', 'dev[\\s-]?tools?', 'developer platforms?', 'devops'] },
  { id: 'ai', label: 'Artificial intelligence', parent: 'software', patterns: ['artificial intelligence', 'a\\.i\\.', 'ai', 'machine learning', 'ml', 'generative ai', 'gen[\\s-]?ai', 'llms?', 'large language models?', 'deep learning', 'computer vision'] },
  { id: 'data', label: 'Data and analytics', parent: 'software', patterns: ['data analytics', 'analytics', 'big data', 'business intelligence', 'data infrastructure', 'data platforms?'] },
  { id: 'cybersecurity', label: 'Cybersecurity', parent: 'software', patterns: ['cyber[\\s-]?security', 'infosec', 'information security', 'security software', 'cyber'] },
  { id: 'fintech', label: 'Fintech', patterns: ['fin[\\s-]?tech', 'financial technology', 'payments?', 'payment processing', 'neo[\\s-]?banks?', 'neo[\\s-]?banking', 'digital banks?', 'digital banking', 'open banking', 'lending', 'wealth[\\s-]?tech', 'reg[\\s-]?tech'] },
  { id: 'insurtech', label: 'Insurtech', patterns: ['insur[\\s-]?tech', 'insurance technology', 'insurance', 'insurers?'] },
  { id: 'financial_services', label: 'Financial services', patterns: ['financial services', 'banks?', 'banking', 'asset management', 'investment firms?', 'asset managers?'] },
  { id: 'crypto', label: 'Blockchain and crypto', patterns: ['blockchain', 'crypto', 'cryptocurrenc(?:y|ies)', 'web3', 'defi', 'nfts?'] },
  { id: 'healthcare', label: 'Healthcare', patterns: ['health[\\s-]?care', 'health[\\s-]?tech', 'digital health', 'health', 'medical', 'hospitals?', 'clinics?', 'telehealth', 'telemedicine'] },
  { id: 'medtech', label: 'Medical devices', parent: 'healthcare', patterns: ['med[\\s-]?tech', 'medical devices?', 'medical technology'] },
  { id: 'biotech', label: 'Biotech', patterns: ['bio[\\s-]?tech', 'biotechnology', 'life sciences?', 'genomics', 'synthetic biology'] },
  { id: 'pharma', label: 'Pharmaceuticals', patterns: ['pharma', 'pharmaceuticals?', 'drug discovery', 'drug development'] },
  { id: 'retail', label: 'Retail', patterns: ['retail', 'retailers?', 'consumer goods', 'cpg'] },
  { id: 'ecommerce', label: 'E-commerce', parent: 'retail', patterns: ['e[\\s-]?commerce', 'online retail(?:ers?)?', 'online shops?', 'online shopping', 'online stores?', 'marketplaces?', 'd2c', 'dtc', 'direct[\\s-]to[\\s-]consumer'] },
  { id: 'logistics', label: 'Logistics', patterns: ['logistics', 'supply[\\s-]chains?', 'freight', 'shipping', 'fulfil?lment', 'warehousing', 'last[\\s-]mile', 'delivery'] },
  { id: 'mobility', label: 'Mobility and automotive', patterns: ['mobility', 'automotive', 'electric vehicles?', 'evs?', 'autonomous driving', 'ride[\\s-]?hailing', 'car makers?', 'carmakers?'] },
  { id: 'edtech', label: 'Education technology', patterns: ['ed[\\s-]?tech', 'education technology', 'e[\\s-]?learning', 'online learning', 'education', 'educational'] },
  { id: 'hrtech', label: 'HR tech', patterns: ['hr[\\s-]?tech', 'hr software', 'human resources software', 'recruiting software', 'recruitment', 'talent acquisition software', 'payroll'] },
  { id: 'legaltech', label: 'Legal tech', patterns: ['legal[\\s-]?tech', 'legal software', 'law firms?'] },
  { id: 'proptech', label: 'Real estate and proptech', patterns: ['prop[\\s-]?tech', 'real[\\s-]estate', 'property management', 'construction tech'] },
  { id: 'energy', label: 'Energy', patterns: ['energy', 'utilities', 'oil and gas', 'power generation'] },
  { id: 'cleantech', label: 'Climate tech', parent: 'energy', patterns: ['clean[\\s-]?tech', 'climate[\\s-]?tech', 'renewable energy', 'renewables', 'solar', 'wind energy', 'carbon capture', 'sustainability'] },
  { id: 'manufacturing', label: 'Manufacturing', patterns: ['manufacturing', 'manufacturers?', 'industrial', 'industry 4\\.0', 'factories', 'machinery'] },
  { id: 'robotics', label: 'Robotics', patterns: ['robotics', 'robots?', 'drones?'] },
  { id: 'hardware', label: 'Hardware and semiconductors', patterns: ['hardware', 'semiconductors?', 'chips?', 'chipmakers?', 'electronics', 'iot', 'internet of things'] },
  { id: 'aerospace', label: 'Aerospace and defense', patterns: ['aerospace', 'space[\\s-]?tech', 'defen[cs]e', 'aviation'] },
  { id: 'agritech', label: 'Agriculture', patterns: ['agri[\\s-]?tech', 'ag[\\s-]?tech', 'agriculture', 'agricultural', 'farming'] },
  { id: 'food', label: 'Food and beverage', patterns: ['food[\\s-]?tech', 'food and beverages?', 'f&b', 'food', 'beverages?', 'restaurants?'] },
  { id: 'gaming', label: 'Gaming', patterns: ['gaming', 'video games?', 'games', 'game studios?', 'game developers?', 'e[\\s-]?sports'] },
  { id: 'media', label: 'Media and entertainment', patterns: ['media', 'entertainment', 'publishing', 'publishers?', 'streaming', 'music'] },
  { id: 'marketing', label: 'Marketing and advertising', patterns: ['mar[\\s-]?tech', 'ad[\\s-]?tech', 'advertising', 'digital marketing', 'marketing (?:agenc(?:y|ies)|companies|firms|startups|technology)'] },
  { id: 'travel', label: 'Travel and hospitality', patterns: ['travel', 'travel[\\s-]?tech', 'tourism', 'hospitality', 'hotels?'] },
  { id: 'telecom', label: 'Telecommunications', patterns: ['telecoms?', 'telecommunications?', 'telcos?', 'mobile networks?'] },
  { id: 'consulting', label: 'Consulting', patterns: ['consulting', 'consultanc(?:y|ies)', 'professional services', 'advisory'] },
  { id: 'it_services', label: 'IT services', patterns: ['it services', 'managed services?', 'managed service providers?', 'msps?', 'it consulting', 'system integrators?'] },
  { id: 'construction', label: 'Construction', patterns: ['construction', 'building materials', 'con[\\s-]?tech'] },
];

export const INDUSTRY_BY_ID = new Map(INDUSTRIES.map((i) => [i.id, i]));

/** True when a record of industry `actual` satisfies a request for `wanted` (the same, or one of its children). */
export function industrySatisfies(wanted: string, actual: string): boolean {
  let id: string | undefined = actual;
  for (let depth = 0; id !== undefined && depth < 4; depth++) {
    if (id === wanted) return true;
    id = INDUSTRY_BY_ID.get(id)?.parent;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------------------------
// Places

export interface Country extends Term {
  /** ISO 3166-1 alpha-2. */
  id: string;
}

/** `[code, name, other patterns]`: the name and the adjective are patterns too. */
const COUNTRY_ROWS: Array<[string, string, string[], string[]?]> = [
  ['US', 'United States', ['united states(?: of america)?', 'usa', 'u\\.s\\.a\\.', 'america', 'american'], ['US', 'U.S.']],
  ['GB', 'United Kingdom', ['united kingdom', 'uk', 'u\\.k\\.', 'great britain', 'britain', 'british', 'england', 'english', 'scotland', 'scottish', 'wales', 'welsh']],
  ['DE', 'Germany', ['germany', 'german', 'deutschland']],
  ['FR', 'France', ['france', 'french']],
  ['ES', 'Spain', ['spain', 'spanish']],
  ['IT', 'Italy', ['italy', 'italian']],
  ['NL', 'Netherlands', ['(?:the )?netherlands', 'holland', 'dutch']],
  ['BE', 'Belgium', ['belgium', 'belgian']],
  ['CH', 'Switzerland', ['switzerland', 'swiss']],
  ['AT', 'Austria', ['austria', 'austrian']],
  ['SE', 'Sweden', ['sweden', 'swedish']],
  ['NO', 'Norway', ['norway', 'norwegian']],
  ['DK', 'Denmark', ['denmark', 'danish']],
  ['FI', 'Finland', ['finland', 'finnish']],
  ['IS', 'Iceland', ['iceland', 'icelandic']],
  ['IE', 'Ireland', ['ireland', 'irish']],
  ['PT', 'Portugal', ['portugal', 'portuguese']],
  ['PL', 'Poland', ['poland']],
  ['CZ', 'Czechia', ['czechia', 'czech republic', 'czech']],
  ['SK', 'Slovakia', ['slovakia', 'slovak']],
  ['SI', 'Slovenia', ['slovenia', 'slovenian']],
  ['HU', 'Hungary', ['hungary', 'hungarian']],
  ['RO', 'Romania', ['romania', 'romanian']],
  ['BG', 'Bulgaria', ['bulgaria', 'bulgarian']],
  ['HR', 'Croatia', ['croatia', 'croatian']],
  ['RS', 'Serbia', ['serbia', 'serbian']],
  ['GR', 'Greece', ['greece', 'greek']],
  ['CY', 'Cyprus', ['cyprus', 'cypriot']],
  ['MT', 'Malta', ['malta', 'maltese']],
  ['LU', 'Luxembourg', ['luxembourg']],
  ['EE', 'Estonia', ['estonia', 'estonian']],
  ['LV', 'Latvia', ['latvia', 'latvian']],
  ['LT', 'Lithuania', ['lithuania', 'lithuanian']],
  ['UA', 'Ukraine', ['ukraine', 'ukrainian']],
  ['TR', 'Türkiye', ['turkey', 't[üu]rkiye', 'turkish']],
  ['IL', 'Israel', ['israel', 'israeli']],
  ['AE', 'United Arab Emirates', ['united arab emirates', 'uae', 'u\\.a\\.e\\.', 'emirati']],
  ['SA', 'Saudi Arabia', ['saudi arabia', 'saudi']],
  ['EG', 'Egypt', ['egypt', 'egyptian']],
  ['NG', 'Nigeria', ['nigeria', 'nigerian']],
  ['KE', 'Kenya', ['kenya', 'kenyan']],
  ['ZA', 'South Africa', ['south africa', 'south african']],
  ['IN', 'India', ['india', 'indian']],
  ['CN', 'China', ['china', 'chinese']],
  ['JP', 'Japan', ['japan', 'japanese']],
  ['KR', 'South Korea', ['south korea', 'korea', 'korean']],
  ['SG', 'Singapore', ['singapore', 'singaporean']],
  ['HK', 'Hong Kong', ['hong kong']],
  ['TW', 'Taiwan', ['taiwan', 'taiwanese']],
  ['ID', 'Indonesia', ['indonesia', 'indonesian']],
  ['VN', 'Vietnam', ['viet ?nam', 'vietnamese']],
  ['TH', 'Thailand', ['thailand', 'thai']],
  ['MY', 'Malaysia', ['malaysia', 'malaysian']],
  ['PH', 'Philippines', ['(?:the )?philippines', 'filipino']],
  ['AU', 'Australia', ['australia', 'australian']],
  ['NZ', 'New Zealand', ['new zealand']],
  ['CA', 'Canada', ['canada', 'canadian']],
  ['MX', 'Mexico', ['mexico', 'mexican']],
  ['BR', 'Brazil', ['brazil', 'brasil', 'brazilian']],
  ['AR', 'Argentina', ['argentina', 'argentinian', 'argentine']],
  ['CL', 'Chile', ['chile', 'chilean']],
  ['CO', 'Colombia', ['colombia', 'colombian']],
];

export const COUNTRIES: readonly Country[] = COUNTRY_ROWS.map(([id, label, patterns, exact]) => ({ id, label, patterns, ...(exact ? { exact } : {}) }));
export const COUNTRY_BY_CODE = new Map(COUNTRIES.map((c) => [c.id, c]));

/** Groups of countries a prompt may name ("in the DACH region", "Nordic"). */
export interface Region extends Term {
  countries: string[];
}

const EU = ['AT', 'BE', 'BG', 'HR', 'CY', 'CZ', 'DK', 'EE', 'FI', 'FR', 'DE', 'GR', 'HU', 'IE', 'IT', 'LV', 'LT', 'LU', 'MT', 'NL', 'PL', 'PT', 'RO', 'SK', 'SI', 'ES', 'SE'];
export const REGIONS: readonly Region[] = [
  { id: 'europe', label: 'Europe', patterns: ['europe', 'european'], countries: [...EU, 'GB', 'CH', 'NO', 'IS', 'UA', 'RS', 'TR'] },
  { id: 'eu', label: 'European Union', patterns: ['european union', 'eu'], countries: EU },
  { id: 'dach', label: 'DACH', patterns: ['dach'], countries: ['DE', 'AT', 'CH'] },
  { id: 'nordics', label: 'Nordics', patterns: ['nordics?', 'nordic countries', 'scandinavia', 'scandinavian'], countries: ['SE', 'NO', 'DK', 'FI', 'IS'] },
  { id: 'benelux', label: 'Benelux', patterns: ['benelux'], countries: ['BE', 'NL', 'LU'] },
  { id: 'baltics', label: 'Baltics', patterns: ['baltics?', 'baltic states'], countries: ['EE', 'LV', 'LT'] },
  { id: 'north_america', label: 'North America', patterns: ['north america', 'north american'], countries: ['US', 'CA', 'MX'] },
  { id: 'latam', label: 'Latin America', patterns: ['latin america', 'latam', 'south america', 'latin american'], countries: ['MX', 'BR', 'AR', 'CL', 'CO'] },
  { id: 'apac', label: 'Asia-Pacific', patterns: ['apac', 'asia[\\s-]pacific', 'asia', 'asian'], countries: ['IN', 'CN', 'JP', 'KR', 'SG', 'HK', 'TW', 'ID', 'VN', 'TH', 'MY', 'PH', 'AU', 'NZ'] },
  { id: 'mena', label: 'Middle East and North Africa', patterns: ['mena', 'middle east', 'middle eastern'], countries: ['IL', 'AE', 'SA', 'EG', 'TR'] },
  { id: 'africa', label: 'Africa', patterns: ['africa', 'african'], countries: ['ZA', 'NG', 'KE', 'EG'] },
];

/** Sub-national regions (US states, a few others) that prompts name: matched against a record's `location.region`. */
export interface State extends Term {
  country: string;
}

export const STATES: readonly State[] = [
  { id: 'US-CA', label: 'California', country: 'US', patterns: ['california', 'silicon valley', 'bay area'] },
  { id: 'US-TX', label: 'Texas', country: 'US', patterns: ['texas'] },
  { id: 'US-FL', label: 'Florida', country: 'US', patterns: ['florida'] },
  { id: 'US-MA', label: 'Massachusetts', country: 'US', patterns: ['massachusetts'] },
  { id: 'US-IL', label: 'Illinois', country: 'US', patterns: ['illinois'] },
  { id: 'US-CO', label: 'Colorado', country: 'US', patterns: ['colorado'] },
  { id: 'US-WA', label: 'Washington', country: 'US', patterns: ['washington state'] },
  { id: 'US-NY', label: 'New York', country: 'US', patterns: ['new york state'] },
  { id: 'DE-BY', label: 'Bavaria', country: 'DE', patterns: ['bavaria', 'bayern'] },
  { id: 'CA-ON', label: 'Ontario', country: 'CA', patterns: ['ontario'] },
];

export interface City extends Term {
  country: string;
}

/** `[label, country, other patterns]`; the label is a pattern too. */
const CITY_ROWS: Array<[string, string, string[]?, string[]?]> = [
  ['Berlin', 'DE'], ['Munich', 'DE', ['m[üu]nchen', 'muenchen']], ['Hamburg', 'DE'], ['Frankfurt', 'DE', ['frankfurt am main']], ['Cologne', 'DE', ['k[öo]ln', 'koeln']],
  ['Stuttgart', 'DE'], ['Düsseldorf', 'DE', ['dusseldorf', 'duesseldorf']], ['Leipzig', 'DE'], ['Dresden', 'DE'], ['Karlsruhe', 'DE'],
  ['Paris', 'FR'], ['Lyon', 'FR'], ['Marseille', 'FR'], ['Toulouse', 'FR'], ['Bordeaux', 'FR'], ['Lille', 'FR'],
  ['London', 'GB'], ['Manchester', 'GB'], ['Edinburgh', 'GB'], ['Cambridge', 'GB'], ['Oxford', 'GB'], ['Bristol', 'GB'], ['Glasgow', 'GB'], ['Birmingham', 'GB'],
  ['Madrid', 'ES'], ['Barcelona', 'ES'], ['Valencia', 'ES'], ['Seville', 'ES', ['sevilla']], ['Malaga', 'ES', ['málaga']],
  ['Milan', 'IT', ['milano']], ['Rome', 'IT', ['roma']], ['Turin', 'IT', ['torino']],
  ['Amsterdam', 'NL'], ['Rotterdam', 'NL'], ['Utrecht', 'NL'], ['Eindhoven', 'NL'], ['The Hague', 'NL', ['den haag']],
  ['Brussels', 'BE', ['bruxelles', 'brussel']], ['Antwerp', 'BE', ['antwerpen']], ['Ghent', 'BE', ['gent']],
  ['Zurich', 'CH', ['z[üu]rich', 'zuerich']], ['Geneva', 'CH', ['gen[eè]ve']], ['Basel', 'CH'], ['Lausanne', 'CH'], ['Zug', 'CH'],
  ['Vienna', 'AT', ['wien']], ['Graz', 'AT'], ['Linz', 'AT'],
  ['Stockholm', 'SE'], ['Gothenburg', 'SE', ['g[öo]teborg']], ['Malmö', 'SE', ['malmo']], ['Oslo', 'NO'], ['Copenhagen', 'DK', ['k[øo]benhavn']], ['Aarhus', 'DK'],
  ['Helsinki', 'FI'], ['Reykjavik', 'IS'], ['Dublin', 'IE'], ['Cork', 'IE'], ['Lisbon', 'PT', ['lisboa']], ['Porto', 'PT'],
  ['Warsaw', 'PL', ['warszawa']], ['Krakow', 'PL', ['krak[óo]w']], ['Wroclaw', 'PL', ['wroc[łl]aw']], ['Prague', 'CZ', ['praha']], ['Brno', 'CZ'], ['Bratislava', 'SK'], ['Ljubljana', 'SI'],
  ['Budapest', 'HU'], ['Bucharest', 'RO', ['bucure[șs]ti']], ['Cluj-Napoca', 'RO', ['cluj']], ['Sofia', 'BG'], ['Zagreb', 'HR'], ['Belgrade', 'RS', ['beograd']],
  ['Athens', 'GR'], ['Nicosia', 'CY'], ['Valletta', 'MT'], ['Tallinn', 'EE'], ['Riga', 'LV'], ['Vilnius', 'LT'], ['Kyiv', 'UA', ['kiev']], ['Istanbul', 'TR'],
  ['Tel Aviv', 'IL', ['tel[\\s-]aviv(?:[\\s-]yafo)?']], ['Jerusalem', 'IL'], ['Dubai', 'AE'], ['Abu Dhabi', 'AE'], ['Riyadh', 'SA'], ['Cairo', 'EG'],
  ['Lagos', 'NG'], ['Nairobi', 'KE'], ['Cape Town', 'ZA'], ['Johannesburg', 'ZA'],
  ['Bangalore', 'IN', ['bengaluru']], ['Mumbai', 'IN', ['bombay']], ['Delhi', 'IN', ['new delhi']], ['Hyderabad', 'IN'], ['Pune', 'IN'], ['Chennai', 'IN'], ['Gurgaon', 'IN', ['gurugram']],
  ['Beijing', 'CN'], ['Shanghai', 'CN'], ['Shenzhen', 'CN'], ['Hangzhou', 'CN'], ['Tokyo', 'JP'], ['Osaka', 'JP'], ['Seoul', 'KR'], ['Taipei', 'TW'],
  ['Jakarta', 'ID'], ['Bangkok', 'TH'], ['Kuala Lumpur', 'MY'], ['Manila', 'PH'], ['Ho Chi Minh City', 'VN', ['saigon']], ['Hanoi', 'VN'],
  ['Sydney', 'AU'], ['Melbourne', 'AU'], ['Brisbane', 'AU'], ['Auckland', 'NZ'],
  ['Toronto', 'CA'], ['Vancouver', 'CA'], ['Montreal', 'CA', ['montr[ée]al']], ['Ottawa', 'CA'],
  ['New York', 'US', ['new york city', 'nyc'], ['NY']], ['San Francisco', 'US', [], ['SF']], ['Los Angeles', 'US', [], ['LA']], ['Seattle', 'US'], ['Boston', 'US'],
  ['Austin', 'US'], ['Chicago', 'US'], ['Denver', 'US'], ['Miami', 'US'], ['Atlanta', 'US'], ['Washington, D.C.', 'US', ['washington,? d\\.?c\\.?']],
  ['Palo Alto', 'US'], ['Mountain View', 'US'], ['San Jose', 'US'], ['San Diego', 'US'], ['Pittsburgh', 'US'], ['Philadelphia', 'US'],
  ['Mexico City', 'MX', ['ciudad de m[ée]xico', 'cdmx']], ['São Paulo', 'BR', ['s[ãa]o paulo']], ['Rio de Janeiro', 'BR'], ['Buenos Aires', 'AR'],
  ['Santiago', 'CL'], ['Bogotá', 'CO', ['bogot[áa]']], ['Medellín', 'CO', ['medell[íi]n']],
  ['Singapore', 'SG'], ['Hong Kong', 'HK'],
];

function cityPattern(label: string): string {
  return label.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+');
}

export const CITIES: readonly City[] = CITY_ROWS.map(([label, country, more, exact]) => ({
  id: `${country}:${label.toLowerCase()}`,
  label,
  country,
  patterns: [cityPattern(label), ...(more ?? [])],
  ...(exact ? { exact } : {}),
}));

/** Cities that are their own country: naming one names both, and a record in that country is in the city. */
export const CITY_STATES = new Set(['SG', 'HK']);

// ---------------------------------------------------------------------------------------------------------------
// People: departments, seniority, functions, C-level titles

export const DEPARTMENTS: readonly Term[] = [
  { id: 'engineering', label: 'Engineering', patterns: ['engineering', 'software', 'technology', 'tech', 'development', 'r&d', 'research and development', 'platform', 'infrastructure'] },
  { id: 'product', label: 'Product', patterns: ['product', 'product management'] },
  { id: 'design', label: 'Design', patterns: ['design', 'ux', 'ui', 'user experience'] },
  { id: 'marketing', label: 'Marketing', patterns: ['marketing', 'growth', 'brand', 'communications', 'content', 'demand generation'] },
  { id: 'sales', label: 'Sales', patterns: ['sales', 'business development', 'bizdev', 'revenue', 'partnerships', 'commercial'] },
  { id: 'finance', label: 'Finance', patterns: ['finance', 'financial', 'accounting', 'fp&a'] },
  { id: 'hr', label: 'People and HR', patterns: ['hr', 'human resources', 'people', 'people operations', 'talent', 'recruiting', 'talent acquisition'] },
  { id: 'operations', label: 'Operations', patterns: ['operations', 'ops', 'operating'] },
  { id: 'legal', label: 'Legal', patterns: ['legal', 'compliance', 'law'] },
  { id: 'data', label: 'Data', patterns: ['data', 'analytics', 'data science', 'ai', 'machine learning', 'ml'] },
  { id: 'security', label: 'Security', patterns: ['security', 'information security', 'infosec', 'cybersecurity'] },
  { id: 'customer_success', label: 'Customer success', patterns: ['customer success', 'customer support', 'support', 'customer service', 'customer experience', 'cx'] },
  { id: 'it', label: 'IT', patterns: ['it', 'information technology'] },
];

/** Seniority levels, highest first. */
export const SENIORITY: readonly Term[] = [
  { id: 'founder', label: 'Founder', patterns: ['founders?', 'co[\\s-]?founders?', 'owners?'] },
  { id: 'c_level', label: 'C-level', patterns: ['c[\\s-]?level', 'c[\\s-]?suite', 'cxos?', 'chiefs?', 'executives?', 'managing directors?', 'presidents?', 'general managers?'] },
  { id: 'vp', label: 'VP', patterns: ['vps?', 'svps?', 'evps?', 'vice[\\s-]presidents?'] },
  { id: 'head', label: 'Head', patterns: ['heads?'] },
  { id: 'director', label: 'Director', patterns: ['directors?'] },
  { id: 'manager', label: 'Manager', patterns: ['managers?'] },
  { id: 'lead', label: 'Lead', patterns: ['team leads?', 'tech leads?'] },
  { id: 'senior', label: 'Senior', patterns: ['senior', 'sr\\.?', 'principal'] },
  { id: 'mid', label: 'Mid-level', patterns: ['mid[\\s-]?level', 'intermediate'] },
  { id: 'junior', label: 'Junior', patterns: ['junior', 'jr\\.?', 'entry[\\s-]level', 'graduates?', 'associates?'] },
  { id: 'intern', label: 'Intern', patterns: ['interns?', 'internships?', 'trainees?', 'working students?'] },
];

export const SENIORITY_RANK = new Map(SENIORITY.map((s, i) => [s.id, i]));

/** Levels that satisfy a request for a level: asking for "senior" accepts a lead; asking for C-level accepts a founder-CEO only by title. */
export const SENIORITY_ACCEPTS: Record<string, string[]> = {
  founder: ['founder'],
  c_level: ['c_level'],
  vp: ['vp'],
  head: ['head'],
  director: ['director'],
  manager: ['manager'],
  lead: ['lead'],
  senior: ['senior', 'lead'],
  mid: ['mid'],
  junior: ['junior'],
  intern: ['intern'],
};

/** C-level titles: the acronym, its long forms, the department it leads. */
export interface ChiefTitle {
  id: string;
  label: string;
  /** The title written out, as pages write it ("Chief Technology Officer"). */
  title: string;
  department: string | null;
  patterns: string[];
}

export const CHIEF_TITLES: readonly ChiefTitle[] = [
  { id: 'ceo', label: 'CEO', title: 'Chief Executive Officer', department: 'executive', patterns: ['ceos?', 'chief executive(?: officers?)?'] },
  { id: 'cto', label: 'CTO', title: 'Chief Technology Officer', department: 'engineering', patterns: ['ctos?', 'chief technology officers?', 'chief technical officers?'] },
  { id: 'cfo', label: 'CFO', title: 'Chief Financial Officer', department: 'finance', patterns: ['cfos?', 'chief financial officers?', 'chief finance officers?'] },
  { id: 'coo', label: 'COO', title: 'Chief Operating Officer', department: 'operations', patterns: ['coos?', 'chief operating officers?', 'chief operations officers?'] },
  { id: 'cmo', label: 'CMO', title: 'Chief Marketing Officer', department: 'marketing', patterns: ['cmos?', 'chief marketing officers?'] },
  { id: 'cpo', label: 'CPO', title: 'Chief Product Officer', department: 'product', patterns: ['cpos?', 'chief product officers?'] },
  { id: 'cro', label: 'CRO', title: 'Chief Revenue Officer', department: 'sales', patterns: ['cros?', 'chief revenue officers?'] },
  { id: 'cco', label: 'CCO', title: 'Chief Commercial Officer', department: 'sales', patterns: ['ccos?', 'chief commercial officers?'] },
  { id: 'ciso', label: 'CISO', title: 'Chief Information Security Officer', department: 'security', patterns: ['cisos?', 'chief information security officers?', 'chief security officers?'] },
  { id: 'cio', label: 'CIO', title: 'Chief Information Officer', department: 'it', patterns: ['cios?', 'chief information officers?'] },
  { id: 'cdo', label: 'CDO', title: 'Chief Data Officer', department: 'data', patterns: ['cdos?', 'chief data officers?'] },
  { id: 'chro', label: 'CHRO', title: 'Chief Human Resources Officer', department: 'hr', patterns: ['chros?', 'chief (?:human resources|people) officers?'] },
];

/** Individual job functions: what a person does, with the department it belongs to. */
export interface JobFunction {
  id: string;
  label: string;
  department: string;
  patterns: string[];
}

export const FUNCTIONS: readonly JobFunction[] = [
  { id: 'data_scientist', label: 'Data scientist', department: 'data', patterns: ['data scientists?', 'machine learning engineers?', 'ml engineers?'] },
  { id: 'data_engineer', label: 'Data engineer', department: 'data', patterns: ['data engineers?'] },
  { id: 'engineer', label: 'Engineer', department: 'engineering', patterns: ['(?:software |backend |back-end |frontend |front-end |full[\\s-]?stack |devops |platform |mobile |cloud )?(?:engineers?|developers?|programmers?)', 'swes?'] },
  { id: 'designer', label: 'Designer', department: 'design', patterns: ['(?:product |ux |ui |graphic )?designers?', 'ux researchers?'] },
  { id: 'product_manager', label: 'Product manager', department: 'product', patterns: ['product managers?', 'product owners?', 'pms'] },
  { id: 'account_executive', label: 'Account executive', department: 'sales', patterns: ['account executives?', 'sales (?:reps?|representatives?)', 'salespeople', 'sdrs?', 'bdrs?', 'account managers?'] },
  { id: 'marketer', label: 'Marketer', department: 'marketing', patterns: ['marketers?', 'growth marketers?', 'marketing specialists?'] },
  { id: 'recruiter', label: 'Recruiter', department: 'hr', patterns: ['recruiters?', 'talent acquisition specialists?'] },
  { id: 'analyst', label: 'Analyst', department: 'data', patterns: ['(?:data |business )?analysts?'] },
  { id: 'accountant', label: 'Accountant', department: 'finance', patterns: ['accountants?', 'controllers?'] },
  { id: 'lawyer', label: 'Lawyer', department: 'legal', patterns: ['lawyers?', 'attorneys?', '(?:general |legal )counsels?'] },
  { id: 'researcher', label: 'Researcher', department: 'engineering', patterns: ['researchers?', 'research scientists?'] },
];

// ---------------------------------------------------------------------------------------------------------------
// Matching helpers

const WORD_BEFORE = '(?<![\\p{L}\\p{N}])';
const WORD_AFTER = '(?![\\p{L}\\p{N}])';

/** Text as the matchers see it: NFKC, typographic dashes and quotes folded. Lengths can change only by NFKC. */
export function normalizeText(text: string): string {
  return text.normalize('NFKC').replace(/[\u2010-\u2015\u2212]/g, '-').replace(/[\u2018\u2019]/g, "'");
}

const compiled = new WeakMap<Term, RegExp[]>();

/** The term's regular expressions (global, so `matchAll` finds every occurrence). */
export function termRegexes(term: Term): RegExp[] {
  let res = compiled.get(term);
  if (!res) {
    res = [
      new RegExp(`${WORD_BEFORE}(?:${term.patterns.join('|')})${WORD_AFTER}`, 'giu'),
      ...(term.exact && term.exact.length > 0 ? [new RegExp(`${WORD_BEFORE}(?:${term.exact.map(escapeRegex).join('|')})${WORD_AFTER}`, 'gu')] : []),
    ];
    compiled.set(term, res);
  }
  return res;
}

export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export interface TermHit<T extends Term> {
  term: T;
  start: number;
  end: number;
  text: string;
}

/** Every occurrence of any of `terms` in `text`, longest first where they overlap, then in text order. */
export function findTerms<T extends Term>(text: string, terms: readonly T[], taken?: boolean[]): TermHit<T>[] {
  const hits: TermHit<T>[] = [];
  for (const term of terms) {
    for (const re of termRegexes(term)) {
      for (const m of text.matchAll(re)) {
        const start = m.index ?? 0;
        hits.push({ term, start, end: start + m[0].length, text: m[0] });
      }
    }
  }
  hits.sort((a, b) => b.end - b.start - (a.end - a.start) || a.start - b.start);
  const used = taken ?? new Array<boolean>(text.length).fill(false);
  const accepted: TermHit<T>[] = [];
  for (const hit of hits) {
    let free = true;
    for (let i = hit.start; i < hit.end; i++) {
      if (used[i]) {
        free = false;
        break;
      }
    }
    if (!free) continue;
    for (let i = hit.start; i < hit.end; i++) used[i] = true;
    accepted.push(hit);
  }
  return accepted.sort((a, b) => a.start - b.start);
}

/** The first term whose patterns match `value` (a record's field), or null. */
export function termOf<T extends Term>(value: string, terms: readonly T[]): T | null {
  const hits = findTerms(normalizeText(value), terms);
  return hits[0]?.term ?? null;
}

/** A country code from a record's field: an ISO code ("DE", "de", "DEU" is not read), a name or an adjective. */
export function countryCode(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const v = value.trim();
  if (/^[A-Za-z]{2}$/.test(v)) {
    const upper = v.toUpperCase();
    if (upper === 'UK') return 'GB';
    return COUNTRY_BY_CODE.has(upper) ? upper : null;
  }
  const city = termOf(v, CITIES);
  const country = termOf(v, COUNTRIES);
  return country?.id ?? (city && CITY_STATES.has(city.country) ? city.country : null);
}
