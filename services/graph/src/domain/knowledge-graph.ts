import { boundedKey, foldName, normalizeDomain, resolutionKey } from './entity-model';
import { isPersonalMailDomain } from './personal-mail';

/**
 * How tabular data (an uploaded file's rows, a saved list's records) and connector documents become typed nodes and
 * labelled edges (docs/memory.md, "Knowledge graphs"). Pure: no SQL, no HTTP. Nodes are named by `label|key` before
 * they have ids; the application resolves them and writes the edges.
 */

export type GraphNodeLabel = 'Person' | 'Company' | 'Position' | 'Location' | 'ScanReport' | 'Document';
export type FactSourceKind = 'document' | 'row' | 'cell';

export interface FactSource {
  kind: FactSourceKind;
  id: string;
  ref?: Record<string, unknown>;
}

export interface PlannedNode {
  label: GraphNodeLabel;
  key: string;
  name: string;
  properties: Record<string, unknown>;
  source: FactSource;
  /**
   * The node's properties are exactly these, replacing what it held (a ScanReport: its record's values now), instead
   * of being merged into them (every entity: a blank never erases).
   */
  replace?: true;
}

export interface PlannedEdge {
  /** `label|key` of the nodes. */
  from: string;
  to: string;
  label: string;
  source: FactSource;
}

export interface Plan {
  nodes: PlannedNode[];
  edges: PlannedEdge[];
}

export const refOf = (n: Pick<PlannedNode, 'label' | 'key'>): string => `${n.label}|${n.key}`;

/** What a column of a table says about its row's entities. */
export type ColumnRole =
  | 'company_name'
  | 'company_domain'
  | 'person_name'
  | 'first_name'
  | 'last_name'
  | 'profile_url'
  | 'email'
  | 'title'
  | 'location'
  | 'industry'
  | 'other';

const ROLE_WORDS: Array<[ColumnRole, RegExp]> = [
  ['profile_url', /^(?:linkedin(?: url| profile(?: url| link)?| link)?|profile(?: url| link)?|person linkedin(?: url)?|linkedin_url)$/],
  [
    'company_domain',
    /^(?:domain|domain name|website|website url|website address|web site|web address|company domain|company domain name|company website|company website url|company url|site|homepage|homepage url|url)$/,
  ],
  [
    'company_name',
    /^(?:company|company name|current company|current employer|organisation|organization|organisation name|organization name|employer|employer name|account|account name|business|business name)$/,
  ],
  ['first_name', /^(?:first name|firstname|given name)$/],
  ['last_name', /^(?:last name|lastname|surname|family name)$/],
  ['person_name', /^(?:full name|person|person name|contact|contact name|contact full name|employee|employee name)$/],
  ['email', /^(?:email|e mail|email address|e mail address|work email|business email)$/],
  ['title', /^(?:title|job title|current title|current job title|current position|position|role|job|job role|designation)$/],
  [
    'location',
    /^(?:location|city|town|city town|country|country region|hq|hq location|headquarters|headquarters location|company location|address|region|state region|mailing city|billing city)$/,
  ],
  ['industry', /^(?:industry|sector|vertical)$/],
];

/**
 * Each column's role, from its header (then its id): the names companies and people lists use (the agents service's
 * fixed columns among them, and common exports' own: `Current Company`, `Website URL`, `Country/Region`...). A bare
 * `name` is a person's when the table also names a company, a title, a profile, a first or last name, or an e-mail
 * without a website or domain column (a people list: `Name,Email,Phone,City` is a contact list), and otherwise the
 * company's (a company list: `Name,Website,Email` keeps companies with their contact address).
 */
export function columnRoles(columns: ReadonlyArray<{ id: string; header: string }>): ColumnRole[] {
  const roleOf = (text: string): ColumnRole | 'name' | null => {
    const t = foldName(text).replace(/_/g, ' ');
    if (t === 'name') return 'name';
    for (const [role, re] of ROLE_WORDS) if (re.test(t)) return role;
    return null;
  };
  const first = columns.map((c) => roleOf(c.header) ?? roleOf(c.id) ?? 'other');
  const has = (role: ColumnRole): boolean => first.includes(role);
  const peopleTable =
    has('company_name') || has('title') || has('profile_url') || has('first_name') || has('last_name') || (has('email') && !has('company_domain'));
  const used = new Set<ColumnRole>();
  return first.map((r) => {
    const role: ColumnRole = r === 'name' ? (peopleTable ? 'person_name' : 'company_name') : r;
    // The first column of a role is the one read; a second `location` or `title` is an ordinary property.
    if (role === 'other' || used.has(role)) return 'other';
    used.add(role);
    return role;
  });
}

/** One row or record: its values by column, and where each value came from. */
export interface TabularRecord {
  /** Values by column index (columns as given to `columnRoles`). */
  values: readonly string[];
  /** The record's own source (a row, or the record of a list) for its ScanReport and facts of several columns. */
  source: FactSource;
  /** The source of one column's value (a list's cell); the record's source when absent. */
  cellSource?: (index: number) => FactSource;
  /** The ScanReport's name (`<file> row 3`, the record's title). */
  reportName: string;
  /** The ScanReport's resolution id: stable per row of a file or record of a list. */
  reportId: string;
}

const clean = (v: string | undefined): string => (v ?? '').replace(/\s+/g, ' ').trim();

/** Honorifics a person's name may start with in a table: `Dr.`, `Prof.`, `Mr.`, `Mrs.`, `Ms.`, `Mx.`, `Miss`. */
const HONORIFIC = /^(?:dr|prof|mrs|mr|ms|mx|miss)(?:\.\s*|\s+)/i;

/**
 * A person's name without the honorifics it starts with (`Prof. Dr. Hans Müller` is `Hans Müller`), and those
 * honorifics (`Prof. Dr.`); a name that is nothing but honorifics stays as it is.
 */
export function splitHonorific(name: string): { name: string; honorific: string } {
  let rest = name;
  const taken: string[] = [];
  for (let m = HONORIFIC.exec(rest); m; m = HONORIFIC.exec(rest)) {
    taken.push(m[0].trim());
    rest = rest.slice(m[0].length);
  }
  return rest.trim() ? { name: rest.trim(), honorific: taken.join(' ') } : { name, honorific: '' };
}

/**
 * The nodes and edges one record says: a Company (by domain, else name), a Person (by profile URL, else name and
 * company) who WORKS_AT it, HOLDS_POSITION a Position (title at the company) and is LOCATED_IN a Location (the
 * company is, when there is no person), and a ScanReport holding every value of the record (and only of it: it
 * replaces what the report held) that DESCRIBES the person and the company. A record naming neither a company nor a
 * person yields only its ScanReport.
 *
 * The company's domain is the website or domain column's. The e-mail's domain names the company only when the record
 * names no company (a company's name is its identity then, not where its people's mail is) and never when it is a
 * personal mail provider's (`gmail.com`, `hotmail.de`: `isPersonalMailDomain`).
 */
export function planRecord(columns: ReadonlyArray<{ id: string; header: string }>, roles: readonly ColumnRole[], record: TabularRecord): Plan {
  const at = (role: ColumnRole): number => roles.indexOf(role);
  const value = (role: ColumnRole): string => {
    const i = at(role);
    return i < 0 ? '' : clean(record.values[i]);
  };
  const sourceOf = (role: ColumnRole): FactSource => {
    const i = at(role);
    return i >= 0 && record.cellSource ? record.cellSource(i) : record.source;
  };
  const nodes: PlannedNode[] = [];
  const edges: PlannedEdge[] = [];

  const email = value('email');
  const emailDomain = email.includes('@') ? normalizeDomain(email.slice(email.lastIndexOf('@') + 1)) : '';
  const companyName = value('company_name');
  const ownDomain = normalizeDomain(value('company_domain'));
  const mailDomain = !companyName && !ownDomain && emailDomain && !isPersonalMailDomain(emailDomain) ? emailDomain : '';
  const domain = ownDomain || mailDomain;
  let company: PlannedNode | null = null;
  if (companyName || domain) {
    const properties: Record<string, unknown> = { name: companyName || domain, domain, industry: value('industry') };
    const key = resolutionKey('Company', properties);
    const source = sourceOf(companyName ? 'company_name' : ownDomain ? 'company_domain' : 'email');
    if (key) company = { label: 'Company', key, name: companyName || domain, properties, source };
  }

  const written = value('person_name') || [value('first_name'), value('last_name')].filter(Boolean).join(' ');
  const { name: personName, honorific } = splitHonorific(written);
  const profile = value('profile_url');
  let person: PlannedNode | null = null;
  if (personName || profile) {
    const properties: Record<string, unknown> = {
      name: personName || profile,
      linkedin_url: profile,
      email,
      title: value('title'),
      company: companyName,
      company_domain: domain,
      honorific,
    };
    const key = resolutionKey('Person', properties);
    if (key) person = { label: 'Person', key, name: personName || profile, properties, source: sourceOf(personName ? 'person_name' : 'profile_url') };
  }

  if (company) nodes.push(company);
  if (person) nodes.push(person);
  if (person && company) edges.push({ from: refOf(person), to: refOf(company), label: 'WORKS_AT', source: sourceOf('company_name') });

  const title = value('title');
  if (title && (person || company)) {
    const properties = { name: title, title, company: companyName, company_domain: domain };
    const key = resolutionKey('Position', properties);
    if (key) {
      const position: PlannedNode = { label: 'Position', key, name: title, properties, source: sourceOf('title') };
      nodes.push(position);
      if (person) edges.push({ from: refOf(person), to: refOf(position), label: 'HOLDS_POSITION', source: sourceOf('title') });
      if (company) edges.push({ from: refOf(position), to: refOf(company), label: 'POSITION_AT', source: sourceOf('title') });
    }
  }

  const place = value('location');
  const placed = person ?? company;
  if (place && placed) {
    const properties = { name: place };
    const key = resolutionKey('Location', properties);
    if (key) {
      const location: PlannedNode = { label: 'Location', key, name: place, properties, source: sourceOf('location') };
      nodes.push(location);
      edges.push({ from: refOf(placed), to: refOf(location), label: 'LOCATED_IN', source: sourceOf('location') });
    }
  }

  // Without a prototype: a column headed `__proto__` (or `constructor`) is a key like any other.
  const reportProps: Record<string, unknown> = Object.assign(Object.create(null) as Record<string, unknown>, { id: record.reportId, name: record.reportName });
  columns.forEach((c, i) => {
    const v = clean(record.values[i]);
    if (v) reportProps[reportPropertyOf(c.header || c.id)] = v;
  });
  const reportKey = resolutionKey('ScanReport', reportProps);
  if (reportKey) {
    const report: PlannedNode = { label: 'ScanReport', key: reportKey, name: record.reportName, properties: reportProps, source: record.source, replace: true };
    nodes.push(report);
    for (const described of [person, company]) {
      if (described) edges.push({ from: refOf(report), to: refOf(described), label: 'DESCRIBES', source: record.source });
    }
  }
  return { nodes, edges };
}

/**
 * Where a ScanReport keeps a cell: under its header, except the report's own `id` (its reference, which its
 * resolution key is made of) and `name`. A column headed `id` or `name` is kept as `column:id`, `column:name`: were
 * it written over the reference, rows sharing an `id` value (in one file or across files and lists) would be one
 * report, and a `name` would be lost under the report's name. A header that itself starts with `column:` is prefixed
 * the same way, so no two headers ever share a key (`column:id` is `column:column:id`).
 */
export function reportPropertyOf(header: string): string {
  return header === 'id' || header === 'name' || header.startsWith('column:') ? `column:${header}` : header;
}

/** A connector document, as the graph reads it. */
export interface GraphDocument {
  doc_id: string;
  memory_id: string;
  cc_pair_id: number;
  title: string;
  link: string | null;
  source_type: string | null;
  external_id: string | null;
  entities: ReadonlyArray<{ name: string; kind: string }>;
}

const KIND_LABEL: Record<string, GraphNodeLabel> = { organization: 'Company', person: 'Person', place: 'Location' };

/**
 * The source a connector document's facts are recorded under: the connector's document (memory, pair, source id),
 * not the memory's copy of it, so a changed document (a new copy) is the same source and only what changed in it
 * closes or opens.
 */
export const documentSourceId = (doc: Pick<GraphDocument, 'memory_id' | 'cc_pair_id' | 'external_id' | 'doc_id'>): string =>
  `${doc.memory_id}/${doc.cc_pair_id}/${doc.external_id ?? doc.doc_id}`;

/** The resolution key of a connector document's node. */
export const documentNodeKey = (doc: Pick<GraphDocument, 'memory_id' | 'cc_pair_id' | 'external_id' | 'doc_id'>): string => boundedKey(`doc:${documentSourceId(doc)}`);

/**
 * A connector document's node and what it MENTIONS: the people, organisations and places memory ingest's extraction
 * finds in its text (concepts are not node types). Every fact's source is the document.
 */
export function planDocument(doc: GraphDocument, maxEntities: number): Plan {
  const sourceId = documentSourceId(doc);
  const source: FactSource = {
    kind: 'document',
    id: sourceId,
    ref: { memory_id: doc.memory_id, cc_pair_id: doc.cc_pair_id, external_id: doc.external_id, doc_id: doc.doc_id, link: doc.link, source_type: doc.source_type },
  };
  const docNode: PlannedNode = {
    label: 'Document',
    key: documentNodeKey(doc),
    name: doc.title || doc.external_id || doc.doc_id,
    properties: { name: doc.title, link: doc.link ?? '', source_type: doc.source_type ?? '', external_id: doc.external_id ?? '', doc_id: doc.doc_id },
    source,
  };
  const nodes: PlannedNode[] = [docNode];
  const edges: PlannedEdge[] = [];
  const seen = new Set<string>();
  for (const e of doc.entities) {
    if (nodes.length > maxEntities) break;
    const label = KIND_LABEL[e.kind];
    if (!label) continue;
    const properties: Record<string, unknown> = label === 'Person' ? { name: e.name, linkedin_url: '' } : { name: e.name };
    const key = resolutionKey(label as Exclude<GraphNodeLabel, 'Document'>, properties);
    if (!key) continue;
    const node: PlannedNode = { label, key, name: e.name, properties, source };
    if (seen.has(refOf(node))) continue;
    seen.add(refOf(node));
    nodes.push(node);
    edges.push({ from: refOf(docNode), to: refOf(node), label: 'MENTIONS', source });
  }
  return { nodes, edges };
}

// ------------------------------------------------------------------------------ one entity under two forms of key

/*
 * A company is keyed by its domain when a record gives one, else by its name; a person by a profile URL, else by name
 * and company. One entity can so arrive under both forms (a row with the website, another without), and the keys
 * never meet. Before a job writes, `resolveCompanies` and `resolvePeople` give a name-keyed node the key of the one
 * node of the other form it must be, from what the graph holds and what the job itself plans (the application looks
 * the graph's candidates up: store `domainCompaniesNamed`, `profiledPeopleAt`). Exactly one candidate is required:
 * with two (two companies named "Globex" at two domains) the name-keyed node stays apart.
 */

/** The folded name under which a name-keyed node was keyed, or null when its key is another form (or a digest). */
function keyedName(node: PlannedNode, label: GraphNodeLabel): string | null {
  if (node.label !== label || !node.key.startsWith('name:')) return null;
  const name = foldName(typeof node.properties.name === 'string' ? node.properties.name : '');
  return name && (node.key === `name:${name}` || node.key.startsWith(`name:${name}|`)) ? name : null;
}

const nodeName = (node: PlannedNode): string => foldName(typeof node.properties.name === 'string' ? node.properties.name : node.name);

/** The folded names of the name-keyed companies of these plans: the graph's domain-keyed companies of these names are looked up. */
export function companyNamesToResolve(plans: readonly Plan[]): string[] {
  const names = new Set<string>();
  for (const plan of plans) for (const node of plan.nodes) {
    const name = keyedName(node, 'Company');
    if (name) names.add(name);
  }
  return [...names];
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (set) set.add(value);
  else map.set(key, new Set([value]));
}

/** The one candidate of a name, from the graph's and the job's own, or null when there is none or more than one. */
function onlyCandidate(...sets: Array<ReadonlySet<string> | undefined>): string | null {
  const all = new Set<string>();
  for (const set of sets) for (const v of set ?? []) all.add(v);
  return all.size === 1 ? [...all][0]! : null;
}

/** How `rekeyed` changes a node: its new key and properties, and the name a node it creates is given. */
interface Rekey {
  key: string;
  properties: Record<string, unknown>;
  name?: string;
}

/** A plan with some of its nodes re-keyed (`keys`: by old ref), its edges following. */
function rekeyed(plan: Plan, keys: ReadonlyMap<string, Rekey>): Plan {
  if (keys.size === 0) return plan;
  const refs = new Map<string, string>();
  const nodes = plan.nodes.map((node) => {
    const change = keys.get(refOf(node));
    if (!change) return node;
    const next: PlannedNode = { ...node, key: change.key, properties: change.properties, name: change.name ?? node.name };
    refs.set(refOf(node), refOf(next));
    return next;
  });
  const edges = plan.edges.map((e) => ({ ...e, from: refs.get(e.from) ?? e.from, to: refs.get(e.to) ?? e.to }));
  return { nodes, edges };
}

/** Properties without the node's `name`: a node resolved to another keeps that one's spelling of it. */
function withoutName(properties: Record<string, unknown>): Record<string, unknown> {
  const rest = { ...properties };
  delete rest.name;
  return rest;
}

/**
 * Gives each name-keyed Company the key of the one domain-keyed Company whose folded name equals its own: the
 * graph's (`known`: folded name → keys of its domain-keyed companies of that name) or one the same job plans (a row
 * with the website beside a row without it, in either order). The record's person (when not keyed by a profile) and
 * position, which name their company in their keys, follow it.
 */
export function resolveCompanies(plans: readonly Plan[], known: ReadonlyMap<string, ReadonlySet<string>>): Plan[] {
  const planned = new Map<string, Set<string>>();
  // A node the job creates under the key is named as the job's first row with that key names it, whichever batch
  // writes it first.
  const names = new Map<string, string>();
  for (const plan of plans) for (const node of plan.nodes) {
    if (node.label !== 'Company' || !node.key.startsWith('domain:')) continue;
    addTo(planned, nodeName(node), node.key);
    if (!names.has(node.key)) names.set(node.key, node.name);
  }
  return plans.map((plan) => {
    const keys = new Map<string, Rekey>();
    const domains = new Map<string, string>();
    for (const node of plan.nodes) {
      const name = keyedName(node, 'Company');
      const target = name === null ? null : onlyCandidate(known.get(name), planned.get(name));
      if (target === null) continue;
      keys.set(refOf(node), { key: target, properties: withoutName(node.properties), name: names.get(target) });
      domains.set(refOf(node), target.slice('domain:'.length));
    }
    if (domains.size === 0) return plan;
    // The person who works at it and the position at it: keyed by the company's domain now, as a row with it would be.
    for (const e of plan.edges) {
      const domain = domains.get(e.to);
      if (domain === undefined || (e.label !== 'WORKS_AT' && e.label !== 'POSITION_AT')) continue;
      const node = plan.nodes.find((n) => refOf(n) === e.from);
      if (!node || (node.label !== 'Person' && node.label !== 'Position')) continue;
      const properties = { ...node.properties, company_domain: domain };
      const key = resolutionKey(node.label, properties);
      if (key) keys.set(e.from, { key, properties });
    }
    return rekeyed(plan, keys);
  });
}

/** A person's name and the key of the company they work at, as `profiledPeopleAt` looks them up. */
export interface PersonAtCompany {
  name: string;
  companyKey: string;
}

export const personAtCompanyKey = (p: PersonAtCompany): string => `${p.name}\u0000${p.companyKey}`;

/** Each Person of the plans with the company it WORKS_AT in its record, and whether it is keyed by a profile. */
function peopleAtCompanies(plans: readonly Plan[]): Array<{ plan: number; node: PlannedNode; at: PersonAtCompany; profiled: boolean }> {
  const out: Array<{ plan: number; node: PlannedNode; at: PersonAtCompany; profiled: boolean }> = [];
  plans.forEach((plan, i) => {
    for (const e of plan.edges) {
      if (e.label !== 'WORKS_AT') continue;
      const node = plan.nodes.find((n) => refOf(n) === e.from && n.label === 'Person');
      const companyKey = e.to.startsWith('Company|') ? e.to.slice('Company|'.length) : '';
      if (!node || !companyKey) continue;
      const profiled = node.key.startsWith('profile:');
      const name = profiled ? nodeName(node) : keyedName(node, 'Person');
      if (name) out.push({ plan: i, node, at: { name, companyKey }, profiled });
    }
  });
  return out;
}

/** The profile-less people of these plans, by name and company: the graph's profiled people at the company are looked up. */
export function peopleToResolve(plans: readonly Plan[]): PersonAtCompany[] {
  const seen = new Map<string, PersonAtCompany>();
  for (const p of peopleAtCompanies(plans)) if (!p.profiled) seen.set(personAtCompanyKey(p.at), p.at);
  return [...seen.values()];
}

/**
 * Gives each Person keyed by name and company the key of the one profiled Person of the same folded name who works
 * (or worked) at the same company: the graph's (`known`: `personAtCompanyKey` → their keys) or one the same job plans.
 * Run after `resolveCompanies`, so the company is the resolved one.
 */
export function resolvePeople(plans: readonly Plan[], known: ReadonlyMap<string, ReadonlySet<string>>): Plan[] {
  const people = peopleAtCompanies(plans);
  const planned = new Map<string, Set<string>>();
  const names = new Map<string, string>();
  for (const p of people) {
    if (!p.profiled) continue;
    addTo(planned, personAtCompanyKey(p.at), p.node.key);
    if (!names.has(p.node.key)) names.set(p.node.key, p.node.name);
  }
  const keys = plans.map(() => new Map<string, Rekey>());
  for (const p of people) {
    if (p.profiled) continue;
    const target = onlyCandidate(known.get(personAtCompanyKey(p.at)), planned.get(personAtCompanyKey(p.at)));
    if (target !== null) keys[p.plan]!.set(refOf(p.node), { key: target, properties: withoutName(p.node.properties), name: names.get(target) });
  }
  return plans.map((plan, i) => rekeyed(plan, keys[i]!));
}
