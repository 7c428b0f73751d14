import {
  columnRoles,
  companyNamesToResolve,
  documentSourceId,
  peopleToResolve,
  personAtCompanyKey,
  planDocument,
  planRecord,
  refOf,
  resolveCompanies,
  resolvePeople,
  splitHonorific,
  type Plan,
} from './knowledge-graph';

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

  it('keys a company by the e-mail\'s domain only when the row names none, places a company without a person, and names each fact\'s cell', () => {
    const columns = cols('Company', 'Email', 'HQ');
    const plan = (values: string[]) =>
      planRecord(columns, columnRoles(columns), {
        values,
        source: { kind: 'cell', id: 'r1:*' },
        cellSource: (i) => ({ kind: 'cell', id: `r1:${columns[i]!.id}` }),
        reportName: 'Initech',
        reportId: 'r1',
      });
    // The company's name is its identity; where its people's mail goes is not.
    expect(plan(['Initech', 'ops@initech.example', 'Austin']).nodes[0]).toMatchObject({ label: 'Company', key: 'name:initech', properties: { name: 'Initech', domain: '' } });
    const byMail = plan(['', 'ops@initech.example', 'Austin']);
    expect(byMail.nodes[0]).toMatchObject({ label: 'Company', key: 'domain:initech.example', name: 'initech.example', source: { kind: 'cell', id: 'r1:email' } });
    expect(byMail.edges.find((e) => e.label === 'LOCATED_IN')).toEqual({ from: refOf(byMail.nodes[0]!), to: 'Location|name:austin', label: 'LOCATED_IN', source: { kind: 'cell', id: 'r1:hq' } });
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

const plansOf = (headers: string[], rows: string[][], file = 'f.csv'): Plan[] =>
  rows.map((values, i) => {
    const columns = cols(...headers);
    const id = `${file}#${i + 2}`;
    return planRecord(columns, columnRoles(columns), { values, source: { kind: 'row', id }, reportName: `${file} row ${i + 2}`, reportId: id });
  });
const facts = (plans: Plan[]) => plans.flatMap((p) => p.edges.filter((e) => e.label !== 'DESCRIBES').map((e) => `${e.from} ${e.label} ${e.to}`));
const keysOf = (plans: Plan[], label: string) => [...new Set(plans.flatMap((p) => p.nodes.filter((n) => n.label === label).map((n) => n.key)))];

describe('e-mail domains, people lists and header synonyms', () => {
  it('keeps each named company its own whatever domain its people\'s mail has, and a free-mail domain is never a company', () => {
    const plans = plansOf(
      ['Full Name', 'Company', 'Title', 'Email'],
      [
        ['Alice Jones', 'Stripe', 'Engineer', 'alice.jones@gmail.com'],
        ['Bob King', 'Shopify', 'Designer', 'bob.king@gmail.com'],
        ['Carol White', 'Stripe', 'PM', 'carol@stripe.com'],
        ['Dan Brown', 'Independent Consultant', 'Consultant', 'dan@outlook.com'],
        ['Mark Lee', '', 'Freelancer', 'mark@gmail.com'],
      ],
    );
    expect(keysOf(plans, 'Company').sort()).toEqual(['name:independent consultant', 'name:shopify', 'name:stripe']);
    expect(facts(plans).filter((f) => f.includes('WORKS_AT'))).toEqual([
      'Person|name:alice jones|stripe WORKS_AT Company|name:stripe',
      'Person|name:bob king|shopify WORKS_AT Company|name:shopify',
      'Person|name:carol white|stripe WORKS_AT Company|name:stripe',
      'Person|name:dan brown|independent consultant WORKS_AT Company|name:independent consultant',
    ]);
    expect(plans[4]!.nodes.map((n) => refOf(n))).toEqual(['Person|name:mark lee', 'Position|title:freelancer', 'ScanReport|ref:f.csv#6']);
    expect(plans[4]!.nodes[0]!.properties).toMatchObject({ email: 'mark@gmail.com', company_domain: '' });
  });

  it('reads a contact list (a bare name beside an e-mail) as people; an address at a company\'s domain still names that company', () => {
    expect(columnRoles(cols('Name', 'Email', 'Phone', 'City'))).toEqual(['person_name', 'email', 'other', 'location']);
    // With a website column the table is a company list: the e-mail is the company's contact address.
    expect(columnRoles(cols('Name', 'Website', 'Email'))).toEqual(['company_name', 'company_domain', 'email']);
    const plans = plansOf(
      ['Name', 'Email', 'Phone', 'City'],
      [
        ['Alice Jones', 'alice.jones@gmail.com', '+1 555 0100', 'Boston'],
        ['Bob King', 'bob.king@gmail.com', '+1 555 0101', 'Denver'],
        ['Carol White', 'carol@whiteconsulting.com', '+1 555 0102', 'Austin'],
      ],
    );
    expect(keysOf(plans, 'Person')).toEqual(['name:alice jones', 'name:bob king', 'name:carol white|whiteconsulting.com']);
    expect(keysOf(plans, 'Company')).toEqual(['domain:whiteconsulting.com']);
    expect(facts(plans)).toEqual([
      'Person|name:alice jones LOCATED_IN Location|name:boston',
      'Person|name:bob king LOCATED_IN Location|name:denver',
      'Person|name:carol white|whiteconsulting.com WORKS_AT Company|domain:whiteconsulting.com',
      'Person|name:carol white|whiteconsulting.com LOCATED_IN Location|name:austin',
    ]);
    // A row with nothing but an address at a company's domain names that company, by its domain.
    const only = plansOf(['First Name', 'Last Name', 'Company Name', 'Email'], [['', '', '', 'orphan@hooli.com']]);
    expect(keysOf(only, 'Company')).toEqual(['domain:hooli.com']);
  });

  it('reads the headers common exports use', () => {
    const roles = (...headers: string[]) => Object.fromEntries(headers.map((h, i) => [h, columnRoles(cols(...headers))[i]]));
    expect(roles('Name', 'Current Company', 'Current Title', 'Profile URL', 'Location')).toEqual({
      Name: 'person_name', 'Current Company': 'company_name', 'Current Title': 'title', 'Profile URL': 'profile_url', Location: 'location',
    });
    expect(roles('First Name', 'Last Name', 'Email', 'Company Name', 'Job Title', 'Country/Region', 'Website URL')).toMatchObject({
      'Country/Region': 'location', 'Website URL': 'company_domain',
    });
    expect(roles('Contact Name', 'Account Name', 'Company Domain Name', 'Email Address', 'Mailing City')).toEqual({
      'Contact Name': 'person_name', 'Account Name': 'company_name', 'Company Domain Name': 'company_domain', 'Email Address': 'email', 'Mailing City': 'location',
    });
    expect(roles('Full name', 'Organisation', 'Job title', 'Work email', 'LinkedIn profile URL', 'Town')).toMatchObject({ Town: 'location', 'LinkedIn profile URL': 'profile_url' });
    expect(roles('Company Name', 'Domain', 'Industry', 'Headquarters Location')).toMatchObject({ 'Headquarters Location': 'location' });
    // A company's LinkedIn page is not a person's profile.
    expect(roles('Name', 'Title', 'Company LinkedIn URL')).toMatchObject({ 'Company LinkedIn URL': 'other' });
  });
});

describe('honorifics', () => {
  it('takes the honorifics a person\'s name starts with out of the name, and keeps them apart', () => {
    expect(splitHonorific('Dr. Sarah O\'Connor')).toEqual({ name: 'Sarah O\'Connor', honorific: 'Dr.' });
    expect(splitHonorific('Prof. Dr. Hans-Peter Müller')).toEqual({ name: 'Hans-Peter Müller', honorific: 'Prof. Dr.' });
    expect(splitHonorific('Mrs Robinson')).toEqual({ name: 'Robinson', honorific: 'Mrs' });
    expect(splitHonorific('Ms.Jane Doe')).toEqual({ name: 'Jane Doe', honorific: 'Ms.' });
    for (const name of ['Drew Barrymore', 'Mxolisi Dube', 'Dr.', 'Prof', 'Mr Dr']) expect(splitHonorific(name).name).toBe(name === 'Mr Dr' ? 'Dr' : name);
    const [plan] = plansOf(['First Name', 'Last Name', 'Company'], [['Dr. Sarah', 'O\'Connor', 'Cyberdyne Systems']]);
    expect(plan!.nodes.find((n) => n.label === 'Person')).toMatchObject({ key: 'name:sarah o connor|cyberdyne systems', name: 'Sarah O\'Connor', properties: { name: 'Sarah O\'Connor', honorific: 'Dr.' } });
    // The row's own record keeps the cell as written.
    expect(plan!.nodes.find((n) => n.label === 'ScanReport')!.properties).toMatchObject({ 'First Name': 'Dr. Sarah' });
  });
});

describe('a record\'s report', () => {
  it('is marked to replace what the report held, where every entity\'s properties are merged', () => {
    const [plan] = plansOf(['Name', 'Company'], [['Ada', 'Initech']]);
    expect(plan!.nodes.filter((n) => n.replace).map((n) => n.label)).toEqual(['ScanReport']);
  });
});

describe('one entity under two forms of key', () => {
  const company = ['Company', 'Website', 'HQ'];

  it('gives a company named without a domain the key of the one company of that name with one, in the same upload in either order', () => {
    const plans = plansOf(company, [
      ['ACME GMBH ', '', 'Berlin'],
      ['Acme GmbH', 'https://acme.de/about', 'Berlin'],
      ['Société Générale', 'societegenerale.com', 'Paris'],
      ['Societe Generale', '', 'Paris'],
      ['Initech', '', 'Austin'],
    ]);
    expect(companyNamesToResolve(plans)).toEqual(['acme gmbh', 'societe generale', 'initech']);
    const resolved = resolveCompanies(plans, new Map());
    expect(keysOf(resolved, 'Company')).toEqual(['domain:acme.de', 'domain:societegenerale.com', 'name:initech']);
    // Its spelling does not replace the name of the company it resolved to; the rest of what it says is kept.
    expect(resolved[0]!.nodes[0]!.properties).toEqual({ domain: '', industry: '' });
    // Should its batch write the node first, the node is named as the row with the domain names it.
    expect(resolved[0]!.nodes[0]!.name).toBe('Acme GmbH');
    expect(facts(resolved)[0]).toBe('Company|domain:acme.de LOCATED_IN Location|name:berlin');
    expect(resolved[0]!.edges.filter((e) => e.label === 'DESCRIBES').map((e) => e.to)).toEqual(['Company|domain:acme.de']);
    // The plans given are not changed.
    expect(plans[0]!.nodes[0]!.key).toBe('name:acme gmbh');
  });

  it('resolves to a company the graph holds, and keeps a name apart when two companies of that name have domains', () => {
    const plans = plansOf(company, [['Globex', '', 'Madrid']]);
    expect(keysOf(resolveCompanies(plans, new Map([['globex', new Set(['domain:globex.com'])]])), 'Company')).toEqual(['domain:globex.com']);
    expect(keysOf(resolveCompanies(plans, new Map([['globex', new Set(['domain:globex.com', 'domain:globex.de'])]])), 'Company')).toEqual(['name:globex']);
    const both = plansOf(company, [['Globex', '', 'Madrid'], ['Globex', 'globex.de', 'Bonn']]);
    expect(keysOf(resolveCompanies(both, new Map([['globex', new Set(['domain:globex.com'])]])), 'Company')).toEqual(['name:globex', 'domain:globex.de']);
  });

  it('re-keys the person and the position of a resolved company as a row with its domain would key them', () => {
    const plans = plansOf(
      ['Name', 'Title', 'Company', 'Website'],
      [
        ['Bob Smith', 'Engineer', 'Acme GmbH', ''],
        ['Bob Smith', 'Engineer', 'Acme GmbH', 'acme.de'],
      ],
    );
    const resolved = resolveCompanies(plans, new Map());
    expect(keysOf(resolved, 'Person')).toEqual(['name:bob smith|acme.de']);
    expect(keysOf(resolved, 'Position')).toEqual(['title:engineer|acme.de']);
    expect(facts([resolved[0]!])).toEqual([
      'Person|name:bob smith|acme.de WORKS_AT Company|domain:acme.de',
      'Person|name:bob smith|acme.de HOLDS_POSITION Position|title:engineer|acme.de',
      'Position|title:engineer|acme.de POSITION_AT Company|domain:acme.de',
    ]);
  });

  it('gives a person without a profile the key of the one profiled person of that name at the same company', () => {
    const headers = ['First Name', 'Last Name', 'Company Name', 'Job Title', 'LinkedIn URL', 'City', 'Website'];
    const plans = resolveCompanies(
      plansOf(headers, [
        ['Anna', 'Müller', 'Acme GmbH', 'Head of Sales', 'https://www.linkedin.com/in/anna-mueller/', 'Berlin', 'https://www.acme.de'],
        ['anna', 'muller', 'ACME GmbH', 'head of sales', '', 'berlin', 'acme.de'],
        ['Anna', 'Müller', 'Initech', 'Advisor', '', 'Austin', 'initech.io'],
      ]),
      new Map(),
    );
    expect(peopleToResolve(plans)).toEqual([
      { name: 'anna muller', companyKey: 'domain:acme.de' },
      { name: 'anna muller', companyKey: 'domain:initech.io' },
    ]);
    const resolved = resolvePeople(plans, new Map());
    // At Initech no profiled Anna Müller is known: that one stays apart.
    expect(keysOf(resolved, 'Person')).toEqual(['profile:linkedin.com/in/anna-mueller', 'name:anna muller|initech.io']);
    expect(resolved[1]!.nodes.find((n) => n.label === 'Person')!.properties).not.toHaveProperty('name');
    expect(resolved[1]!.nodes.find((n) => n.label === 'Person')!.name).toBe('Anna Müller');
    expect(facts([resolved[1]!])[0]).toBe('Person|profile:linkedin.com/in/anna-mueller WORKS_AT Company|domain:acme.de');

    // The graph's profiled people count too; two of them keep the person apart.
    const initech = personAtCompanyKey({ name: 'anna muller', companyKey: 'domain:initech.io' });
    expect(keysOf(resolvePeople(plans, new Map([[initech, new Set(['profile:x.example/anna'])]])), 'Person')).toContain('profile:x.example/anna');
    const two = new Map([[personAtCompanyKey({ name: 'anna muller', companyKey: 'domain:acme.de' }), new Set(['profile:x.example/other-anna'])]]);
    expect(keysOf(resolvePeople(plans, two), 'Person')).toEqual(['profile:linkedin.com/in/anna-mueller', 'name:anna muller|acme.de', 'name:anna muller|initech.io']);
  });

  it('leaves a person without a company, and a connector document\'s names, as they are', () => {
    const plans = plansOf(['Name', 'Email'], [['Mark Lee', 'mark@gmail.com']]);
    expect(peopleToResolve(plans)).toEqual([]);
    const doc = planDocument(
      { doc_id: 'd1', memory_id: 'm', cc_pair_id: 4, title: 'Wiki', link: null, source_type: 'web', external_id: 'w', entities: [{ name: 'Acme GmbH', kind: 'organization' }, { name: 'Ada', kind: 'person' }] },
      10,
    );
    const [resolved] = resolveCompanies([doc], new Map([['acme gmbh', new Set(['domain:acme.de'])]]));
    expect(resolved!.nodes.map((n) => refOf(n))).toEqual(['Document|doc:m/4/w', 'Company|domain:acme.de', 'Person|name:ada']);
    expect(resolved!.edges.map((e) => e.to)).toEqual(['Company|domain:acme.de', 'Person|name:ada']);
  });
});
