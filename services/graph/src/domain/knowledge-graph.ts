import { boundedKey, foldName, normalizeDomain, resolutionKey } from './entity-model';

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
  ['profile_url', /^(?:linkedin(?: url| profile(?: url)?)?|profile(?: url)?|person linkedin(?: url)?|linkedin_url)$/],
  ['company_domain', /^(?:domain|website|web site|company domain|company website|company url|site|homepage|url)$/],
  ['company_name', /^(?:company|company name|organisation|organization|organisation name|organization name|employer|account|account name|business)$/],
  ['first_name', /^(?:first name|firstname|given name)$/],
  ['last_name', /^(?:last name|lastname|surname|family name)$/],
  ['person_name', /^(?:full name|person|person name|contact|contact name|employee)$/],
  ['email', /^(?:email|e mail|email address|work email)$/],
  ['title', /^(?:title|job title|position|role|job)$/],
  ['location', /^(?:location|city|country|hq|headquarters|address|region)$/],
  ['industry', /^(?:industry|sector|vertical)$/],
];

/**
 * Each column's role, from its header (then its id): the names companies and people lists use (the agents service's
 * fixed columns among them). A bare `name` is a person's when the table also names a company, a title or a profile
 * (a people list), and otherwise the company's (a company list).
 */
export function columnRoles(columns: ReadonlyArray<{ id: string; header: string }>): ColumnRole[] {
  const roleOf = (text: string): ColumnRole | 'name' | null => {
    const t = foldName(text).replace(/_/g, ' ');
    if (t === 'name') return 'name';
    for (const [role, re] of ROLE_WORDS) if (re.test(t)) return role;
    return null;
  };
  const first = columns.map((c) => roleOf(c.header) ?? roleOf(c.id) ?? 'other');
  const peopleTable = first.some((r) => r === 'company_name' || r === 'title' || r === 'profile_url' || r === 'first_name');
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

/**
 * The nodes and edges one record says: a Company (by domain, else name), a Person (by profile URL, else name and
 * company) who WORKS_AT it, HOLDS_POSITION a Position (title at the company) and is LOCATED_IN a Location (the
 * company is, when there is no person), and a ScanReport holding every value of the record that DESCRIBES the
 * person and the company. A record naming neither a company nor a person yields only its ScanReport.
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
  const emailDomain = email.includes('@') ? normalizeDomain(email.split('@')[1] ?? '') : '';
  const companyName = value('company_name');
  const domain = normalizeDomain(value('company_domain')) || emailDomain;
  let company: PlannedNode | null = null;
  if (companyName || domain) {
    const properties: Record<string, unknown> = { name: companyName || domain, domain, industry: value('industry') };
    const key = resolutionKey('Company', properties);
    if (key) company = { label: 'Company', key, name: companyName || domain, properties, source: sourceOf(companyName ? 'company_name' : 'company_domain') };
  }

  const personName = value('person_name') || [value('first_name'), value('last_name')].filter(Boolean).join(' ');
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
    const report: PlannedNode = { label: 'ScanReport', key: reportKey, name: record.reportName, properties: reportProps, source: record.source };
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
