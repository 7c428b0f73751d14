import { columnRoles, documentSourceId, planDocument, planRecord, refOf } from './knowledge-graph';

const cols = (...headers: string[]) => headers.map((h) => ({ id: h.toLowerCase(), header: h }));
const row = { kind: 'row' as const, id: 'f.csv#2' };

describe('columnRoles', () => {
  it('reads a bare name as a person in a people table and as a company otherwise', () => {
    expect(columnRoles(cols('Name', 'Title', 'Company'))).toEqual(['person_name', 'title', 'company_name']);
    expect(columnRoles(cols('Name', 'Website', 'City'))).toEqual(['company_name', 'company_domain', 'location']);
  });

  it('falls back to the column id, and reads only the first column of a role', () => {
    expect(columnRoles([{ id: 'profile_url', header: 'Profile' }, { id: 'x', header: 'LinkedIn URL' }, { id: 'location', header: 'Where' }])).toEqual(['profile_url', 'other', 'location']);
  });
});

describe('planRecord', () => {
  it('plans a person who works at a company, holds a position and lives somewhere, with a report describing both', () => {
    const columns = cols('Name', 'Title', 'Company', 'Website', 'LinkedIn', 'City', 'Score');
    const plan = planRecord(columns, columnRoles(columns), {
      values: ['Ada Lovelace', 'CTO', 'Initech', 'https://www.initech.example/about', 'https://linkedin.com/in/ada/', 'Berlin', '9'],
      source: row,
      reportName: 'f.csv row 2',
      reportId: 'f.csv#2',
    });
    expect(plan.nodes.map((n) => `${n.label}|${n.key}`)).toEqual([
      'Company|domain:initech.example',
      'Person|profile:linkedin.com/in/ada',
      'Position|title:cto|initech.example',
      'Location|name:berlin',
      'ScanReport|ref:f.csv#2',
    ]);
    const person = plan.nodes.find((n) => n.label === 'Person')!;
    expect(person.properties).toMatchObject({ name: 'Ada Lovelace', linkedin_url: 'https://linkedin.com/in/ada/' });
    expect(plan.edges.map((e) => `${e.from.split('|')[0]} ${e.label} ${e.to.split('|')[0]}`)).toEqual([
      'Person WORKS_AT Company',
      'Person HOLDS_POSITION Position',
      'Position POSITION_AT Company',
      'Person LOCATED_IN Location',
      'ScanReport DESCRIBES Person',
      'ScanReport DESCRIBES Company',
    ]);
    expect(plan.nodes.find((n) => n.label === 'ScanReport')!.properties).toMatchObject({ Score: '9', Name: 'Ada Lovelace' });
  });

  it('resolves a company from an e-mail domain, places a company without a person, and names each fact\'s cell', () => {
    const columns = cols('Company', 'Email', 'HQ');
    const plan = planRecord(columns, columnRoles(columns), {
      values: ['Initech', 'ops@initech.example', 'Austin'],
      source: { kind: 'cell', id: 'r1:*' },
      cellSource: (i) => ({ kind: 'cell', id: `r1:${columns[i]!.id}` }),
      reportName: 'Initech',
      reportId: 'r1',
    });
    expect(plan.nodes[0]).toMatchObject({ label: 'Company', key: 'domain:initech.example' });
    expect(plan.edges.find((e) => e.label === 'LOCATED_IN')).toEqual({ from: refOf(plan.nodes[0]!), to: 'Location|name:austin', label: 'LOCATED_IN', source: { kind: 'cell', id: 'r1:hq' } });
  });

  it('keeps the report its own id and name, and a row\'s `id` and `name` cells beside them, so rows never share a report by an id column', () => {
    const columns = cols('id', 'name', 'company');
    const plans = ['f.csv#2', 'g.csv#2'].map((reportId, i) =>
      planRecord(columns, columnRoles(columns), { values: ['1', ['Ann Alpha', 'Bob Beta'][i]!, 'AlphaCo'], source: row, reportName: `${reportId} row`, reportId }),
    );
    const reports = plans.map((p) => p.nodes.find((n) => n.label === 'ScanReport')!);
    expect(reports.map((r) => r.key)).toEqual(['ref:f.csv#2', 'ref:g.csv#2']);
    expect(reports[0]!.properties).toEqual({ id: 'f.csv#2', name: 'f.csv#2 row', 'column:id': '1', 'column:name': 'Ann Alpha', company: 'AlphaCo' });
  });

  it('keeps every cell of a row whatever its header: `__proto__`, `constructor`, a header spelled like a kept one', () => {
    const columns = cols('company', '__proto__', 'constructor', 'id', 'column:id');
    const plan = planRecord(columns, columnRoles(columns), { values: ['Acme', 'protoval', 'ctorval', 'ID1', 'colid'], source: row, reportName: 'r', reportId: 'f.csv#2' });
    const report = plan.nodes.find((n) => n.label === 'ScanReport')!;
    const props = JSON.parse(JSON.stringify(report.properties)) as Record<string, unknown>;
    expect(Object.keys(props).sort()).toEqual(['__proto__', 'column:column:id', 'column:id', 'company', 'constructor', 'id', 'name']);
    expect(props).toMatchObject({ 'column:id': 'ID1', 'column:column:id': 'colid', constructor: 'ctorval', company: 'Acme' });
    expect(Object.getOwnPropertyDescriptor(props, '__proto__')?.value).toBe('protoval');
  });

  it('plans only the report for a row that names no company or person', () => {
    const columns = cols('Note');
    const plan = planRecord(columns, columnRoles(columns), { values: ['hello'], source: row, reportName: 'r', reportId: 'f.csv#2' });
    expect(plan.nodes.map((n) => n.label)).toEqual(['ScanReport']);
    expect(plan.edges).toEqual([]);
  });
});

describe('planDocument', () => {
  it('makes the document a node that mentions its people, organisations and places, all sourced to the connector document', () => {
    const doc = { doc_id: 'd1', memory_id: 'm', cc_pair_id: 4, title: 'Wiki', link: null, source_type: 'web', external_id: 'wiki/ada' };
    const plan = planDocument(
      { ...doc, entities: [{ name: 'Ada Lovelace', kind: 'person' }, { name: 'Initech Corp', kind: 'organization' }, { name: 'Quantum', kind: 'concept' }, { name: 'Berlin', kind: 'place' }] },
      10,
    );
    expect(documentSourceId(doc)).toBe('m/4/wiki/ada');
    expect(plan.nodes.map((n) => n.label)).toEqual(['Document', 'Person', 'Company', 'Location']);
    expect(plan.nodes[1]!.properties).toEqual({ name: 'Ada Lovelace', linkedin_url: '' });
    expect(plan.edges.every((e) => e.label === 'MENTIONS' && e.source.id === 'm/4/wiki/ada')).toBe(true);
  });
});
