import { PostgresDirectory, upsertDirectoryRecords, type DirectoryInput } from '@lore/agents';
import type { TenantFixture } from '../gateway/harness';
import { startAgentsStack, type AgentsStack } from './harness';

type Json = Record<string, any>;
const as = (key: string) => ({ authorization: `Bearer ${key}` });

const COMPANIES: Array<Record<string, unknown>> = [
  { name: 'Acme GmbH', domain: 'acme.de', industry: 'Robotics', employees: 120, founded: 1999, location: { city: 'Berlin', country: 'DE' }, tags: ['b2b', 'hardware'] },
  { name: 'Beta Labs', website: 'https://www.betalabs.io/about', industry: 'Software', employees: 15, founded: 2018, location: { city: 'Paris', country: 'FR' }, tags: ['saas'] },
  { name: 'Corvid AG', domain: 'corvid.ch', industry: 'software', employees: 45, location: { city: 'Zurich', country: 'CH' }, tags: [] },
  { name: 'Delta Motors', domain: 'delta.example', industry: 'Automotive', employees: '900', founded: 1950, location: { city: 'Munich', country: 'DE' }, offices: [{ city: 'Hamburg' }, { city: 'Vienna' }] },
  { name: 'Echo Ltd', domain: 'echo.co.uk', industry: null, employees: 7, location: { country: 'GB' }, tags: ['saas', 'b2b'] },
];

describe('the directory and its database search through the gateway', () => {
  let s: AgentsStack;
  let a: TenantFixture;
  let b: TenantFixture;

  beforeAll(async () => {
    s = await startAgentsStack();
    a = await s.tenant();
    b = await s.tenant();
    await upsertDirectoryRecords(s.db, a.tenantId, COMPANIES.map((data): DirectoryInput => ({ kind: 'company', data, source: 'csv:seed' })));
    await upsertDirectoryRecords(s.db, a.tenantId, [
      { kind: 'person', data: { name: 'Ada Park', title: 'CTO', company: 'Acme GmbH', profile_url: 'https://linkedin.com/in/adapark', location: { country: 'DE' } }, source: 'csv:seed' },
      { kind: 'person', data: { name: 'Ben Ode', title: 'Sales lead', company: 'Beta Labs' }, source: 'csv:seed' },
    ]);
    // The other tenant has a record that would match every filter below.
    await upsertDirectoryRecords(s.db, b.tenantId, [{ kind: 'company', data: { name: 'Acme GmbH', domain: 'acme.de', employees: 120, location: { country: 'DE' }, tags: ['b2b'] }, source: 'csv:other' }]);
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  async function names(filter: unknown, key = a.key, path = '/company-search/database-search'): Promise<string[]> {
    const r = await s.call('POST', path, as(key), { filter, limit: 100 });
    expect([r.status, r.json?.success]).toEqual([200, true]);
    return (r.json.data as Json[]).map((x) => x.name as string).sort();
  }

  it('answers the whole page shape, newest first, with paging and the total count', async () => {
    const r = await s.call('POST', '/company-search/database-search', as(a.key), {});
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ success: true, count: 5, limit: 25, offset: 0 });
    const first = (r.json.data as Json[]).find((x) => x.name === 'Acme GmbH')!;
    expect(first).toEqual({ ...COMPANIES[0], id: expect.stringMatching(/^[0-9a-f]{32}$/), source: 'csv:seed', updated_at: expect.any(String) });
    const page = await s.call('POST', '/company-search/database-search', as(a.key), { limit: 2, offset: 4 });
    expect(page.json).toMatchObject({ success: true, count: 5, limit: 2, offset: 4 });
    expect(page.json.data).toHaveLength(1);
    const all = (r.json.data as Json[]).map((x) => x.updated_at as string);
    expect([...all].sort().reverse()).toEqual(all);
  });

  it('matches implicit equality, $eq and $ne on dotted paths', async () => {
    expect(await names({ 'location.country': 'DE' })).toEqual(['Acme GmbH', 'Delta Motors']);
    expect(await names({ 'location.city': { $eq: 'Paris' } })).toEqual(['Beta Labs']);
    expect(await names({ 'location.country': { $ne: 'DE' } })).toEqual(['Beta Labs', 'Corvid AG', 'Echo Ltd']);
    expect(await names({ industry: null })).toEqual(['Echo Ltd']);
    expect(await names({ 'location.country': 'DE', industry: 'Robotics' })).toEqual(['Acme GmbH']);
  });

  it('compares numbers numerically and strings as text, never one against the other', async () => {
    expect(await names({ employees: { $gte: 45 } })).toEqual(['Acme GmbH', 'Corvid AG']);
    expect(await names({ employees: { $gt: 7, $lt: 120 } })).toEqual(['Beta Labs', 'Corvid AG']);
    expect(await names({ employees: { $lte: 7 } })).toEqual(['Echo Ltd']);
    // Delta's employees are the string "900": a number never orders against it, a string does (as text).
    expect(await names({ employees: { $gt: '8' } })).toEqual(['Delta Motors']);
    expect(await names({ employees: 900 })).toEqual([]);
    expect(await names({ employees: '900' })).toEqual(['Delta Motors']);
    expect(await names({ name: { $lt: 'C' } })).toEqual(['Acme GmbH', 'Beta Labs']);
    expect(await names({ founded: { $lt: 2000 } })).toEqual(['Acme GmbH', 'Delta Motors']);
  });

  it('matches an array field when any element matches, also arrays of objects on the way', async () => {
    expect(await names({ tags: 'b2b' })).toEqual(['Acme GmbH', 'Echo Ltd']);
    expect(await names({ tags: { $in: ['saas', 'nothing'] } })).toEqual(['Beta Labs', 'Echo Ltd']);
    expect(await names({ tags: { $nin: ['saas'] } })).toEqual(['Acme GmbH', 'Corvid AG', 'Delta Motors']);
    expect(await names({ 'offices.city': 'Vienna' })).toEqual(['Delta Motors']);
    expect(await names({ tags: { $regex: '^hard' } })).toEqual(['Acme GmbH']);
  });

  it('matches $in and $nin, $exists, $regex with and without $options "i"', async () => {
    expect(await names({ 'location.country': { $in: ['FR', 'CH'] } })).toEqual(['Beta Labs', 'Corvid AG']);
    expect(await names({ 'location.country': { $nin: ['FR', 'CH', 'DE'] } })).toEqual(['Echo Ltd']);
    expect(await names({ founded: { $exists: false } })).toEqual(['Corvid AG', 'Echo Ltd']);
    expect(await names({ tags: { $exists: true } })).toEqual(['Acme GmbH', 'Beta Labs', 'Corvid AG', 'Echo Ltd']);
    expect(await names({ industry: { $regex: '^soft' } })).toEqual(['Corvid AG']);
    expect(await names({ industry: { $regex: '^soft', $options: 'i' } })).toEqual(['Beta Labs', 'Corvid AG']);
  });

  it('combines $and and $or', async () => {
    expect(await names({ $or: [{ 'location.country': 'FR' }, { employees: { $lt: 10 } }] })).toEqual(['Beta Labs', 'Echo Ltd']);
    expect(await names({ $and: [{ 'location.country': 'DE' }, { $or: [{ founded: { $gt: 1990 } }, { tags: 'none' }] }] })).toEqual(['Acme GmbH']);
  });

  it('searches people at /people-search/database-search, and keeps tenants apart', async () => {
    expect(await names({ title: { $regex: 'cto', $options: 'i' } }, a.key, '/people-search/database-search')).toEqual(['Ada Park']);
    expect(await names({}, a.key, '/people-search/database-search')).toEqual(['Ada Park', 'Ben Ode']);
    expect(await names({ 'location.country': 'DE' }, b.key)).toEqual(['Acme GmbH']);
    expect(await names({}, b.key, '/people-search/database-search')).toEqual([]);
  });

  it('merges a record written again (same domain) instead of adding one', async () => {
    await upsertDirectoryRecords(s.db, b.tenantId, [{ kind: 'company', data: { website: 'http://ACME.de/', industry: 'Robotics' }, source: 'list:l2' }]);
    const r = await s.call('POST', '/company-search/database-search', as(b.key), { filter: { domain: 'acme.de' } });
    expect(r.json.count).toBe(1);
    expect(r.json.data[0]).toMatchObject({ name: 'Acme GmbH', industry: 'Robotics', website: 'http://ACME.de/', source: 'list:l2' });
  });

  it('serves list building the same search through the Directory port', async () => {
    const dir = new PostgresDirectory(s.db);
    const found = await dir.search(a.tenantId, 'company', { employees: { $gte: 100 } }, { limit: 10 });
    expect(found.map((x) => x.data.name)).toEqual(['Acme GmbH']);
    expect(found[0]).toMatchObject({ kind: 'company', source: 'csv:seed', updatedAt: expect.any(String) });
  });

  it.each([
    [{ filter: { name: { $where: 'x' } } }, 'body.filter.name.$where', /unknown operator/],
    [{ filter: { 'bad path': 1 } }, 'body.filter.bad path', /field path/],
    [{ filter: { employees: { $gt: [1] } } }, 'body.filter.employees.$gt', /number or a string/],
    [{ filter: { name: { $regex: 'x'.repeat(257) } } }, 'body.filter.name.$regex', /256/],
    [{ filter: { name: { $regex: '(' } } }, 'body.filter', /regular expression/],
    // Patterns whose cost can explode are refused before they run (no statement timeout stops embedded mode's).
    [{ filter: { name: { $regex: '^(.*)\\1\\1\\1$' } } }, 'body.filter.name.$regex', /back-references/],
    [{ filter: { name: { $regex: '(a{1,200}){1,200}y' } } }, 'body.filter.name.$regex', /take too long/],
    [{ filter: 'name' }, 'body.filter', /object|record/i],
    [{ limit: 0 }, 'body.limit', /.+/],
    [{ limit: 101 }, 'body.limit', /.+/],
    [{ offset: -1 }, 'body.offset', /.+/],
  ])('refuses %j with 422 body (a) naming %s', async (body, field, message) => {
    const r = await s.call('POST', '/company-search/database-search', as(a.key), body);
    expect(r.status).toBe(422);
    expect(r.json).toEqual({ status_code: 422, message: 'validation failed', errors: [{ field, message: expect.stringMatching(message), type: expect.any(String) }], data: null });
  });

  it('refuses filters nested deeper than 8 levels and with more than 64 clauses', async () => {
    const nest = (levels: number): Json => (levels === 0 ? { a: 1 } : { $or: [nest(levels - 1)] });
    const deep = await s.call('POST', '/company-search/database-search', as(a.key), { filter: nest(9) });
    expect(deep.status).toBe(422);
    expect(deep.json.errors[0].message).toMatch(/deeper than 8/);
    const wide = await s.call('POST', '/company-search/database-search', as(a.key), { filter: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`f${i}`, i])) });
    expect([wide.status, wide.json.errors[0]]).toEqual([422, { field: 'body.filter.f64', message: 'the filter has more than 64 clauses', type: 'value_error' }]);
    expect((await s.call('POST', '/company-search/database-search', as(a.key), { filter: nest(8) })).status).toBe(200);
  });

  it('lets a read-only key search, and nobody without a credential', async () => {
    const readOnly = await s.key(a.tenantId, { scopes: { access: 'read' } });
    expect(await names({ 'location.country': 'CH' }, readOnly)).toEqual(['Corvid AG']);
    const anon = await s.call('POST', '/company-search/database-search', {}, {});
    expect(anon.status).toBe(401);
  });
});
