import type { DirectoryKind } from '../sources/directory';

/**
 * What an imported CSV column holds (docs/agents.md, "CSV import"): its role, read from the header's name, and its
 * data type, read from sampled values; from both a suggested description ("Company website (URL)", "Number of
 * employees") the user may edit at review, and the directory fields a row fills.
 */

export type ColumnRole =
  | 'profile_url' | 'email' | 'website' | 'domain' | 'employees' | 'phone' | 'first_name' | 'last_name' | 'full_name'
  | 'company' | 'title' | 'seniority' | 'department' | 'industry' | 'country' | 'city' | 'region' | 'revenue' | 'founded'
  | 'description' | 'tags' | 'name';

export type ColumnDataType = 'url' | 'email' | 'integer' | 'number' | 'date' | 'boolean' | 'text';

/** Header words → role, first match wins (so `company_website` is a website, `company_name` a company). */
const ROLES: Array<[RegExp, ColumnRole, string]> = [
  [/linked\s*in|profile[\s_-]*(url|link)/i, 'profile_url', 'LinkedIn or other profile URL'],
  [/e[\s_-]*mail/i, 'email', 'Email address'],
  [/web\s*site|homepage|\burl\b|_url\b|^url/i, 'website', 'Company website (URL)'],
  [/domain/i, 'domain', 'Company domain'],
  [/employee|head[\s_-]*count|staff|team[\s_-]*size/i, 'employees', 'Number of employees'],
  [/phone|mobile|\btel\b/i, 'phone', 'Phone number'],
  [/first[\s_-]*name|given[\s_-]*name/i, 'first_name', 'First name'],
  [/last[\s_-]*name|surname|family[\s_-]*name/i, 'last_name', 'Last name'],
  [/full[\s_-]*name|contact[\s_-]*name|person|^contact$/i, 'full_name', "Person's full name"],
  [/company|organi[sz]ation|employer|account[\s_-]*name|business/i, 'company', 'Company name'],
  [/title|position|^role$|job/i, 'title', 'Job title'],
  [/seniority|level/i, 'seniority', 'Seniority'],
  [/department|team|function/i, 'department', 'Department'],
  [/industry|sector|vertical/i, 'industry', 'Industry'],
  [/country/i, 'country', 'Country'],
  [/city|town/i, 'city', 'City'],
  [/state|region|province|county/i, 'region', 'Region or state'],
  [/revenue|turnover|\barr\b/i, 'revenue', 'Revenue'],
  [/founded|year[\s_-]*(of[\s_-]*)?(founding|established)|established/i, 'founded', 'Year founded'],
  [/description|about|summary|overview/i, 'description', 'Description'],
  [/tags?$|keywords?|categor/i, 'tags', 'Tags'],
  [/^name$/i, 'name', 'Name'],
];

export function roleOf(header: string): ColumnRole | null {
  return ROLES.find(([re]) => re.test(header))?.[1] ?? null;
}

const URL_RE = /^(https?:\/\/)?([a-z0-9-]+\.)+[a-z]{2,}(:\d+)?(\/\S*)?$/i;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const INTEGER_RE = /^[-+]?\d{1,3}([,.\s]?\d{3})*$|^[-+]?\d+$/;
const NUMBER_RE = /^[-+]?(\d+([.,]\d+)?|\d{1,3}(,\d{3})+(\.\d+)?)$/;
const DATE_RE = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+Z?)?$|^\d{1,2}[/.]\d{1,2}[/.]\d{2,4}$/;
const BOOLEAN_RE = /^(true|false|yes|no|y|n|ja|nein)$/i;

/** The data type most (90%) of the non-empty sampled values share; text otherwise or when there are none. */
export function dataTypeOf(values: readonly string[]): ColumnDataType {
  const sample = values.map((v) => v.trim()).filter((v) => v !== '').slice(0, 100);
  if (sample.length === 0) return 'text';
  const share = (re: RegExp) => sample.filter((v) => re.test(v)).length / sample.length >= 0.9;
  if (share(EMAIL_RE)) return 'email';
  if (share(INTEGER_RE)) return 'integer';
  if (share(NUMBER_RE)) return 'number';
  if (share(DATE_RE)) return 'date';
  if (share(BOOLEAN_RE)) return 'boolean';
  if (share(URL_RE)) return 'url';
  return 'text';
}

const TYPE_WORDS: Record<ColumnDataType, string> = { url: 'URL', email: 'email address', integer: 'whole number', number: 'number', date: 'date', boolean: 'yes or no', text: 'text' };

/** `annual_revenue_usd` → `Annual revenue usd`. */
export function humanize(header: string): string {
  const words = header.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_\-.]+/g, ' ').replace(/\s+/g, ' ').trim().toLowerCase();
  return words === '' ? 'Column' : words[0]!.toUpperCase() + words.slice(1);
}

/** The suggested description of a column: its role's wording when the header says one, else its name and data type. */
export function describeColumn(header: string, values: readonly string[]): { description: string; dataType: ColumnDataType } {
  const dataType = dataTypeOf(values);
  const role = ROLES.find(([re]) => re.test(header));
  if (role) return { description: role[2], dataType };
  return { description: `${humanize(header)} (${TYPE_WORDS[dataType]})`, dataType };
}

/** A key the directory's filters can name (`Annual Revenue` → `annual_revenue`), or null. */
export function fieldKeyOf(header: string): string | null {
  const key = header
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return /^[a-z_][a-z0-9_]*$/.test(key) && key.length <= 64 ? key : null;
}

const PERSON_ROLES = new Set<ColumnRole>(['first_name', 'last_name', 'full_name', 'title', 'profile_url', 'seniority', 'department']);

/** How the rows of a file map to directory records: the kind, and each column's role (by column index). */
export interface DirectoryMapping {
  kind: DirectoryKind;
  roles: Array<ColumnRole | null>;
  keys: Array<string | null>;
}

/** People when a column says a person (a first, last or full name, a title, a profile URL), companies otherwise. */
export function directoryMapping(header: readonly string[]): DirectoryMapping {
  const roles = header.map(roleOf);
  const kind: DirectoryKind = roles.some((r) => r !== null && PERSON_ROLES.has(r)) ? 'person' : 'company';
  return { kind, roles, keys: header.map(fieldKeyOf) };
}

function integer(v: string): number | null {
  const digits = v.replace(/[\s,.](?=\d{3}\b)/g, '').replace(/\+$/, '');
  return /^[-+]?\d{1,15}$/.test(digits) ? Number(digits) : null;
}

/**
 * The directory document of one row, or null when the row does not say who it is: a company needs a name and a
 * domain or website; a person a name and a title, company or profile URL. Columns of no known role are kept under
 * their field key (`Annual Revenue` → `annual_revenue`).
 */
export function directoryDocument(mapping: DirectoryMapping, row: readonly string[]): Record<string, unknown> | null {
  const byRole = new Map<ColumnRole, string>();
  // Keys come from the file's header: without a prototype, `constructor` or `toString` is a field like any other.
  const doc: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  row.forEach((raw, i) => {
    const v = raw.trim();
    if (v === '') return;
    const role = mapping.roles[i];
    if (role) {
      if (!byRole.has(role)) byRole.set(role, v);
      return;
    }
    const key = mapping.keys[i];
    if (key && !(key in doc)) doc[key] = v;
  });
  const get = (r: ColumnRole) => byRole.get(r);
  const location: Record<string, string> = {};
  for (const r of ['city', 'region', 'country'] as const) if (get(r)) location[r] = get(r)!;
  if (Object.keys(location).length > 0) doc.location = location;
  for (const r of ['industry', 'description', 'phone', 'email', 'revenue'] as const) if (get(r)) doc[r] = get(r);
  if (get('tags')) doc.tags = get('tags')!.split(/[;,|]/).map((t) => t.trim()).filter((t) => t !== '');
  if (mapping.kind === 'company') {
    const name = get('company') ?? get('name');
    const domain = get('domain');
    const website = get('website');
    if (!name || (!domain && !website)) return null;
    doc.name = name;
    if (domain) doc.domain = domain;
    if (website) doc.website = website;
    const employees = get('employees') ? integer(get('employees')!) : null;
    if (employees !== null) doc.employees = employees;
    else if (get('employees')) doc.employees = get('employees');
    const founded = get('founded') ? integer(get('founded')!) : null;
    if (founded !== null) doc.founded = founded;
    return doc;
  }
  const name = get('full_name') ?? get('name') ?? ([get('first_name'), get('last_name')].filter(Boolean).join(' ') || undefined);
  const title = get('title');
  const company = get('company');
  const profile = get('profile_url');
  if (!name || (!title && !company && !profile)) return null;
  doc.name = name;
  if (title) doc.title = title;
  if (company) doc.company = company;
  if (get('domain') ?? get('website')) doc.company_domain = get('domain') ?? get('website');
  if (profile) doc.profile_url = profile;
  for (const r of ['seniority', 'department'] as const) if (get(r)) doc[r] = get(r);
  return doc;
}
