import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { multipart } from '../e2e/processes';
import type { TenantFixture } from '../gateway/harness';
import { http, type HttpResult } from '../support/http';
import { startAgentsStack, type AgentsStack } from './harness';

jest.setTimeout(120_000);

type Json = Record<string, any>;
const as = (key: string) => ({ authorization: `Bearer ${key}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

/** Small limits so the suite reaches them with small files; small batches so an import takes several; one analysis at once. */
const LIMITS = { maxBytes: 16 * 1024, maxColumns: 8, maxRows: 60, batchSize: 7, sweepIntervalMs: 250, leaseMs: 10_000, maxAnalyses: 1 };

const COMPANIES = [
  'Company,Website,Employees,Country,Notes',
  'Acme GmbH,https://www.acme.de,120,DE,robots',
  '"Beta, Labs",betalabs.io,15,FR,"quoted ""note"""',
  'No Site Corp,,7,GB,',
].join('\r\n');

function events(r: HttpResult): Json[] {
  return r.text
    .split('\n\n')
    .map((chunk) => chunk.trim())
    .filter((chunk) => chunk.startsWith('data: '))
    .map((chunk) => JSON.parse(chunk.slice('data: '.length)) as Json);
}

describe('CSV import through the gateway', () => {
  let s: AgentsStack;
  let a: TenantFixture;
  let b: TenantFixture;

  beforeAll(async () => {
    s = await startAgentsStack({ service: { csvImport: LIMITS } });
    a = await s.tenant();
    b = await s.tenant();
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  function upload(key: string, data: Buffer | string, filename = 'companies.csv', field = 'file'): Promise<HttpResult> {
    const boundary = `lore-${randomUUID()}`;
    return http(s.gateway.publicUrl, 'POST', '/api/lists/csv/upload', {
      headers: { ...as(key), 'content-type': `multipart/form-data; boundary=${boundary}` },
      raw: multipart(boundary, [{ name: field, filename, type: 'text/csv', data }]),
    });
  }

  /** Uploads and answers the stream's events, checking the stream's own shape. */
  async function analysed(data: Buffer | string, key = a.key, filename?: string): Promise<{ threadId: string; events: Json[]; last: Json }> {
    const r = await upload(key, data, filename);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/event-stream/);
    const evs = events(r);
    expect(evs[0]).toMatchObject({ thread_id: expect.stringMatching(UUID), status: 'analyzing' });
    expect(evs.every((e) => e.thread_id === evs[0]!.thread_id)).toBe(true);
    return { threadId: evs[0]!.thread_id as string, events: evs, last: evs[evs.length - 1]! };
  }

  async function failed(data: Buffer | string): Promise<Json[]> {
    const { last, threadId } = await analysed(data);
    expect(last.status).toBe('error');
    const status = await s.call('GET', `/api/lists/csv/status/${threadId}`, as(a.key));
    expect(status.json).toMatchObject({ status: 'error', errors: last.errors, list_id: null });
    for (const e of last.errors as Json[]) expect(e).toEqual({ row: expect.any(Number), column: expect.any(String), message: expect.any(String), value: expect.any(String) });
    return last.errors as Json[];
  }

  async function until(key: string, threadId: string, status: string): Promise<Json> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await s.call('GET', `/api/lists/csv/status/${threadId}`, as(key));
      expect(r.status).toBe(200);
      if (r.json.status === status) return r.json as Json;
      if (Date.now() > deadline) throw new Error(`import ${threadId} stayed ${r.json.status as string}, never ${status}`);
      await sleep(100);
    }
  }

  async function review(key: string, threadId: string, body: Json = {}): Promise<string> {
    const r = await s.call('POST', `/api/lists/csv/review/${threadId}`, as(key), body);
    expect(r.status).toBe(200);
    expect(typeof r.json).toBe('string');
    return (r.json as string).match(UUID)![0];
  }

  it('analyses a file in the stream, stores the thread, its events and the file, then imports it on review', async () => {
    const { threadId, events: evs } = await analysed(COMPANIES);
    expect(evs.map((e) => e.status)).toEqual(['analyzing', 'analyzing', 'ready_for_review']);
    expect(evs[1]).toEqual({
      event: 'analysis',
      thread_id: threadId,
      status: 'analyzing',
      filename: 'companies.csv',
      columns: [
        { column_name: 'Company', column_id: 'Company', description: 'Company name' },
        { column_name: 'Website', column_id: 'Website', description: 'Company website (URL)' },
        { column_name: 'Employees', column_id: 'Employees', description: 'Number of employees' },
        { column_name: 'Country', column_id: 'Country', description: 'Country' },
        { column_name: 'Notes', column_id: 'Notes', description: 'Notes (text)' },
      ],
      row_count: 3,
      delimiter: ',',
      delimiter_name: 'comma',
      encoding: 'utf-8',
      bom: false,
    });
    // The thread, its event log and the file are stored.
    const stored = await s.db.withTenant(a.tenantId, async (sql) => ({
      workflow: (await sql.query<Json>(`SELECT kind, status FROM agents.workflows WHERE thread_id = $1`, [threadId])).rows,
      events: (await sql.query<Json>(`SELECT type, data->>'status' AS status FROM agents.workflow_events WHERE thread_id = $1 ORDER BY seq`, [threadId])).rows,
      blobs: (await sql.query<Json>(`SELECT key, size FROM runtime.blobs WHERE key LIKE $1`, [`csv-imports/${threadId}/%`])).rows,
    }));
    expect(stored.workflow).toEqual([{ kind: 'csv_import', status: 'ready_for_review' }]);
    expect(stored.events).toEqual([
      { type: 'status', status: 'analyzing' },
      { type: 'analysis', status: 'analyzing' },
      { type: 'status', status: 'ready_for_review' },
    ]);
    expect(stored.blobs).toEqual([{ key: `csv-imports/${threadId}/companies.csv`, size: String(Buffer.byteLength(COMPANIES)) }]);

    const before = await s.call('GET', `/api/lists/csv/status/${threadId}`, as(a.key));
    expect(before.json).toMatchObject({ thread_id: threadId, status: 'ready_for_review', list_id: null, total_rows: 3, imported_rows: 0, errors: [] });

    const listId = await review(a.key, threadId, {
      listName: 'Prospects',
      listDescription: 'from the fair',
      category: 'companies',
      column_descriptions: [
        { column_name: 'Headcount', column_id: 'Employees', description: 'People on the payroll' },
        // Renamed only: the analysis's description stays.
        { column_name: 'Land', column_id: 'Country' },
      ],
    });
    const done = await until(a.key, threadId, 'completed');
    expect(done).toEqual({
      thread_id: threadId,
      status: 'completed',
      list_id: listId,
      total_rows: 3,
      imported_rows: 3,
      errors: [],
      columns: [
        { column_name: 'Company', column_id: 'Company', description: 'Company name' },
        { column_name: 'Website', column_id: 'Website', description: 'Company website (URL)' },
        { column_name: 'Headcount', column_id: 'Employees', description: 'People on the payroll' },
        { column_name: 'Land', column_id: 'Country', description: 'Country' },
        { column_name: 'Notes', column_id: 'Notes', description: 'Notes (text)' },
      ],
    });
    const statuses = await s.db.withTenant(a.tenantId, (sql) => sql.query<Json>(`SELECT data->>'status' AS status FROM agents.workflow_events WHERE thread_id = $1 AND type = 'status' ORDER BY seq`, [threadId]));
    expect(statuses.rows.map((r) => r.status)).toEqual(['analyzing', 'ready_for_review', 'importing', 'processing', 'completed']);

    // Reviewing again starts nothing and names the same list.
    const again = await s.call('POST', `/api/lists/csv/review/${threadId}`, as(a.key), {});
    expect([again.status, again.json]).toEqual([200, `CSV import already started; list_id: ${listId}`]);

    const restored = await s.call('GET', `/api/lists/csv/restore/${listId}`, as(a.key));
    expect(restored.status).toBe(200);
    expect(restored.json).toMatchObject({ list_id: listId, status: 'restored', criteria: [], total_target: 3, title: 'Prospects', description: 'from the fair', thread_id: threadId, listType: 'csv_import', supervisor_started: false });
    const table = restored.json.table_structure as Json;
    expect(table).toMatchObject({ total_target: 3, current_count: 3 });
    expect((table.columns as Json[]).map((c) => [c.id, c.header, c.dataType])).toEqual([
      ['Company', 'Company', 'text'],
      ['Website', 'Website', 'url'],
      ['Employees', 'Headcount', 'integer'],
      ['Country', 'Land', 'text'],
      ['Notes', 'Notes', 'text'],
    ]);
    expect(table.rows[1]).toEqual({
      id: 'row-3',
      step_source: 'csv_import',
      metadata: { source: 'csv', csv_row: 3, filename: 'companies.csv' },
      cells: expect.objectContaining({
        Company: { row_id: 'row-3', column_id: 'Company', value: 'Beta, Labs', status: 'completed', metadata: { source: 'csv', csv_row: 3, csv_column: 'Company' }, expandable: false },
        Notes: expect.objectContaining({ value: 'quoted "note"' }),
      }),
    });

    // Rows naming a company with a website went into the directory; the one without did not.
    const dir = await s.call('POST', '/company-search/database-search', as(a.key), { filter: { name: { $in: ['Acme GmbH', 'Beta, Labs', 'No Site Corp'] } } });
    expect(dir.status).toBe(200);
    expect((dir.json.data as Json[]).every((d) => d.source === `csv:${listId}`)).toBe(true);
    expect((dir.json.data as Json[]).map((d) => [d.name, d.employees, d.location?.country, d.notes]).sort()).toEqual([
      ['Acme GmbH', 120, 'DE', 'robots'],
      ['Beta, Labs', 15, 'FR', 'quoted "note"'],
    ]);
  });

  it('reads people rows into the people directory', async () => {
    const csv = 'First Name\tLast Name\tJob Title\tCompany\tLinkedIn URL\nAda\tPark\tCTO\tAcme\thttps://linkedin.com/in/ada\nBo\tLind\t\t\t\n';
    const { threadId, events: evs } = await analysed(csv, a.key, 'people.tsv');
    expect(evs[1]).toMatchObject({ delimiter: '\t', delimiter_name: 'tab', row_count: 2 });
    const listId = await review(a.key, threadId, { listName: 'People' });
    await until(a.key, threadId, 'completed');
    const people = await s.call('POST', '/people-search/database-search', as(a.key), { filter: { name: { $in: ['Ada Park', 'Bo Lind'] } } });
    expect(people.json.data).toEqual([expect.objectContaining({ name: 'Ada Park', title: 'CTO', company: 'Acme', profile_url: 'https://linkedin.com/in/ada', source: `csv:${listId}` })]);
  });

  it('detects semicolons and a UTF-8 byte-order mark', async () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('Name;City;Revenue\nMüller AG;Köln;1,5\nZeta;Wien;2,0\n')]);
    const { events: evs, last } = await analysed(bytes);
    expect(last.status).toBe('ready_for_review');
    expect(evs[1]).toMatchObject({ delimiter: ';', delimiter_name: 'semicolon', encoding: 'utf-8', bom: true, row_count: 2 });
    expect((evs[1]!.columns as Json[]).map((c) => c.column_id)).toEqual(['Name', 'City', 'Revenue']);
  });

  it('reads UTF-16 by its byte-order mark, little and big endian', async () => {
    const text = 'Name,City\nMüller AG,Köln\n';
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const be = Buffer.from(le);
    be.swap16();
    for (const [bytes, encoding] of [[le, 'utf-16le'], [be, 'utf-16be']] as const) {
      const { threadId, events: evs } = await analysed(bytes);
      expect(evs[1]).toMatchObject({ encoding, bom: true, row_count: 1 });
      await review(a.key, threadId);
      const done = await until(a.key, threadId, 'completed');
      const restored = await s.call('GET', `/api/lists/csv/restore/${done.list_id as string}`, as(a.key));
      expect(restored.json.table_structure.rows[0].cells.City.value).toBe('Köln');
    }
  });

  it('falls back to windows-1252 when the bytes are not UTF-8, and says so', async () => {
    const bytes = Buffer.from('Name,City,Price\nM\xfcller,K\xf6ln,\x8010\n', 'latin1');
    const { threadId, events: evs } = await analysed(bytes);
    expect(evs[1]).toMatchObject({ encoding: 'windows-1252', bom: false });
    await review(a.key, threadId);
    const done = await until(a.key, threadId, 'completed');
    const restored = await s.call('GET', `/api/lists/csv/restore/${done.list_id as string}`, as(a.key));
    const cells = restored.json.table_structure.rows[0].cells as Json;
    expect([cells.Name.value, cells.City.value, cells.Price.value]).toEqual(['Müller', 'Köln', '€10']);
  });

  it('ends malformed, empty, header-only and binary files in status error with every problem listed', async () => {
    expect(await failed('Name,City\nAcme,"Berlin\nBeta,Paris\n')).toEqual([{ row: 2, column: '', message: expect.stringMatching(/quoted field is not closed/), value: '' }]);
    const ragged = await failed('Name,City\nAcme,Berlin\nBeta\nGamma,Rome,IT\nDelta,Oslo\n');
    expect(ragged).toEqual([
      { row: 3, column: '', message: 'the row has 1 field; the header has 2', value: 'Beta' },
      { row: 4, column: '', message: 'the row has 3 fields; the header has 2', value: 'Gamma,Rome,IT' },
    ]);
    expect(await failed('')).toEqual([{ row: 0, column: '', message: 'the file is empty', value: '' }]);
    expect(await failed('\r\n \n')).toEqual([{ row: 0, column: '', message: 'the file is empty', value: '' }]);
    expect(await failed('Name,City\r\n')).toEqual([{ row: 0, column: '', message: 'the file has a header and no rows', value: '' }]);
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4b70000000049454e44ae426082', 'hex');
    expect(await failed(png)).toEqual([{ row: 0, column: '', message: 'the file is not CSV text (it holds binary data)', value: '' }]);
    expect(await failed('Name,,Name\nx,y,z\n')).toEqual([
      { row: 1, column: 'column 2', message: 'the header names no column here', value: '' },
      { row: 1, column: 'Name', message: 'the header names this column more than once', value: 'Name' },
    ]);
    const longName = 'n'.repeat(201);
    expect(await failed(`Name,${longName}\nx,y\n`)).toEqual([{ row: 1, column: `${'n'.repeat(200)}…`, message: "the column's name is longer than 200 characters", value: '201' }]);
  });

  it('counts a column name in characters and cuts problems between characters, so an emoji never leaves the upload stuck', async () => {
    // 200 emoji (400 UTF-16 units) are 200 characters: accepted; 201 are refused, the name cut after the 200th.
    expect((await analysed(`a,${'😀'.repeat(200)}\n1,2\n`)).last.status).toBe('ready_for_review');
    expect(await failed(`a,${'😀'.repeat(201)}\n1,2\n`)).toEqual([{ row: 1, column: `${'😀'.repeat(200)}…`, message: "the column's name is longer than 200 characters", value: '201' }]);
    // An emoji across the 200th UTF-16 unit is kept whole: a lone half of it could not be stored, and the upload
    // stayed `analyzing`. 199 letters and an emoji are 200 characters (accepted); one letter more is refused.
    expect((await analysed(`${'a'.repeat(199)}😀,b\n1,2\n`)).last.status).toBe('ready_for_review');
    expect(await failed(`${'a'.repeat(199)}😀x,b\n1,2\n`)).toEqual([{ row: 1, column: `${'a'.repeat(199)}😀…`, message: "the column's name is longer than 200 characters", value: '201' }]);
    expect(await failed(`a,b\n${'x'.repeat(199)}😀yy\n`)).toEqual([{ row: 2, column: '', message: 'the row has 1 field; the header has 2', value: `${'x'.repeat(199)}😀…` }]);
  });

  it('ends too wide, too long and too large files in status error', async () => {
    const wide = `${Array.from({ length: 9 }, (_, i) => `c${i}`).join(',')}\n${Array.from({ length: 9 }, () => 'x').join(',')}\n`;
    expect(await failed(wide)).toEqual([{ row: 1, column: '', message: 'the file has 9 columns; at most 8 are allowed', value: '9' }]);
    const long = `n\n${Array.from({ length: 61 }, (_, i) => `r${i}`).join('\n')}\n`;
    expect(await failed(long)).toEqual([{ row: 0, column: '', message: 'the file has more than 60 rows', value: '60' }]);
    const large = `Name,Notes\n${Array.from({ length: 400 }, (_, i) => `n${i},${'x'.repeat(40)}`).join('\n')}\n`;
    expect(Buffer.byteLength(large)).toBeGreaterThan(LIMITS.maxBytes);
    expect(await failed(large)).toEqual([{ row: 0, column: '', message: `the file is larger than ${LIMITS.maxBytes} bytes`, value: '' }]);
    // Exactly the limit is within it; one byte more is not.
    const head = `Name,Notes\n${Array.from({ length: 40 }, (_, i) => `n${i},${'x'.repeat(300)}`).join('\n')}\nlast,`;
    const exact = `${head}${'y'.repeat(LIMITS.maxBytes - Buffer.byteLength(head) - 1)}\n`;
    expect(Buffer.byteLength(exact)).toBe(LIMITS.maxBytes);
    expect((await analysed(exact)).last.status).not.toBe('error');
    expect(await failed(`${exact} `)).toEqual([{ row: 0, column: '', message: `the file is larger than ${LIMITS.maxBytes} bytes`, value: '' }]);
  });

  it('takes the part named `file` whatever parts come before or after it, ignoring the others', async () => {
    const send = (parts: Array<{ name: string; filename?: string; type?: string; data: Buffer | string }>) => {
      const boundary = `lore-${randomUUID()}`;
      return http(s.gateway.publicUrl, 'POST', '/api/lists/csv/upload', {
        headers: { ...as(a.key), 'content-type': `multipart/form-data; boundary=${boundary}` },
        raw: multipart(boundary, parts),
      });
    };
    const junk = { name: 'x', filename: 'junk.csv', type: 'text/csv', data: 'junk\n1\n' };
    const note = { name: 'note', data: 'hello' };
    const real = { name: 'file', filename: 'real.csv', type: 'text/csv', data: COMPANIES };
    // Until 2026-11-30 a file part of another name sent first used up busboy's one file and `file` was dropped (422).
    for (const parts of [[junk, real], [real, junk], [note, junk, junk, real], [real, { ...real, filename: 'second.csv', data: 'other\n1\n' }]]) {
      const r = await send(parts);
      expect([parts.map((p) => p.name), r.status]).toEqual([parts.map((p) => p.name), 200]);
      const evs = events(r);
      expect(evs.map((e) => e.status)).toEqual(['analyzing', 'analyzing', 'ready_for_review']);
      expect([evs[0]!.filename, evs[1]!.row_count]).toEqual(['real.csv', 3]);
    }
    // Past the parts read (21), a `file` is never reached: said so, not just "required".
    const tooMany = await send([...Array.from({ length: 21 }, () => junk), real]);
    expect([tooMany.status, tooMany.json]).toEqual([422, { detail: [{ loc: ['body', 'file'], msg: expect.stringMatching(/first 21 parts/), type: 'missing' }] }]);
    expect((await analysed(COMPANIES)).last.status).toBe('ready_for_review');
  });

  it('refuses an upload without a file part (422 body (c)), a body that is not multipart (415) or malformed (400), and a read-only key (403)', async () => {
    const noFile = await upload(a.key, 'a,b\n1,2\n', 'x.csv', 'document');
    expect([noFile.status, noFile.json]).toEqual([422, { detail: [{ loc: ['body', 'file'], msg: expect.stringMatching(/file/), type: 'missing' }] }]);
    const json = await s.call('POST', '/api/lists/csv/upload', as(a.key), { file: 'a,b' });
    expect([json.status, json.json]).toEqual([415, { detail: expect.any(String) }]);
    const malformed = await http(s.gateway.publicUrl, 'POST', '/api/lists/csv/upload', {
      headers: { ...as(a.key), 'content-type': 'multipart/form-data; boundary=xyz' },
      raw: '--xyz\r\ncontent-disposition: form-data; name="file"; filename="a.csv"\r\n\r\nName,City\nAcme,Berlin',
    });
    expect([malformed.status, malformed.json]).toEqual([400, { detail: 'the multipart body is malformed' }]);
    // multipart/form-data without a boundary (or an empty one) is malformed too, not another media type.
    for (const type of ['multipart/form-data', 'multipart/form-data; boundary=']) {
      const noBoundary = await http(s.gateway.publicUrl, 'POST', '/api/lists/csv/upload', {
        headers: { ...as(a.key), 'content-type': type },
        raw: '--xyz\r\ncontent-disposition: form-data; name="file"; filename="a.csv"\r\n\r\nName,City\nAcme,Berlin\r\n--xyz--\r\n',
      });
      expect([type, noBoundary.status, noBoundary.json]).toEqual([type, 400, { detail: 'the multipart body is malformed' }]);
    }
    // A coded body is refused as every coded body is (415), not read as a malformed one.
    const gzipped = await http(s.gateway.publicUrl, 'POST', '/api/lists/csv/upload', {
      headers: { ...as(a.key), 'content-type': 'multipart/form-data; boundary=xyz', 'content-encoding': 'gzip' },
      raw: '--xyz\r\ncontent-disposition: form-data; name="file"; filename="a.csv"\r\n\r\nName,City\nAcme,Berlin\r\n--xyz--\r\n',
    });
    expect([gzipped.status, gzipped.json]).toEqual([415, { detail: expect.stringMatching(/without Content-Encoding/) }]);
    const readOnly = await s.key(a.tenantId, { scopes: { access: 'read' } });
    expect((await upload(readOnly, COMPANIES)).status).toBe(403);
    const { threadId } = await analysed(COMPANIES);
    const refused = await s.call('POST', `/api/lists/csv/review/${threadId}`, as(readOnly), {});
    expect(refused.status).toBe(403);
    // Reading is allowed with a read-only key.
    expect((await s.call('GET', `/api/lists/csv/status/${threadId}`, as(readOnly))).status).toBe(200);
  });

  it('answers a bad review body with 422 body (c) and reviews nothing', async () => {
    const { threadId } = await analysed(COMPANIES);
    const notArray = await s.call('POST', `/api/lists/csv/review/${threadId}`, as(a.key), { column_descriptions: 'Company' });
    expect(notArray.status).toBe(422);
    expect(notArray.json).toEqual({ detail: [{ loc: ['body', 'column_descriptions'], msg: expect.any(String), type: expect.any(String) }] });
    const unknown = await s.call('POST', `/api/lists/csv/review/${threadId}`, as(a.key), { column_descriptions: [{ column_name: 'X', column_id: 'Revenue', description: '' }] });
    expect(unknown.status).toBe(422);
    expect(unknown.json).toEqual({ detail: [{ loc: ['body', 'column_descriptions', 0, 'column_id'], msg: expect.stringMatching(/not a column of the file/), type: 'value_error' }] });
    const badName = await s.call('POST', `/api/lists/csv/review/${threadId}`, as(a.key), { listName: 5, column_descriptions: [{ column_id: 'Company' }] });
    expect(badName.status).toBe(422);
    expect((badName.json.detail as Json[]).map((d) => d.loc)).toEqual(expect.arrayContaining([['body', 'listName'], ['body', 'column_descriptions', 0, 'column_name']]));
    const sameName = await s.call('POST', `/api/lists/csv/review/${threadId}`, as(a.key), { column_descriptions: [{ column_name: 'Company', column_id: 'Website' }] });
    expect([sameName.status, sameName.json]).toEqual([422, { detail: [{ loc: ['body', 'column_descriptions', 0, 'column_name'], msg: expect.stringMatching(/already the name of another column/), type: 'value_error' }] }]);
    // A path id over 512 characters is refused as the workflow routes refuse it; a shorter one that is no UUID names nothing (404, below).
    const badPath = await s.call('POST', `/api/lists/csv/review/${'x'.repeat(513)}`, as(a.key), {});
    expect([badPath.status, badPath.json.detail[0].loc]).toEqual([422, ['path', 'thread_id']]);
    expect((await s.call('GET', `/api/lists/csv/status/${threadId}`, as(a.key))).json.status).toBe('ready_for_review');
    // An import that failed its analysis cannot be reviewed.
    const { threadId: broken } = await analysed('');
    const conflict = await s.call('POST', `/api/lists/csv/review/${broken}`, as(a.key), {});
    expect([conflict.status, conflict.json]).toEqual([409, { detail: expect.stringMatching(/error/) }]);
  });

  it("answers 404 for another tenant's import and list, and for unknown ones", async () => {
    const { threadId } = await analysed(COMPANIES);
    const listId = await review(a.key, threadId);
    await until(a.key, threadId, 'completed');
    for (const [method, path] of [
      ['GET', `/api/lists/csv/status/${threadId}`],
      ['POST', `/api/lists/csv/review/${threadId}`],
      ['GET', `/api/lists/csv/restore/${listId}`],
      ['GET', `/api/lists/csv/status/${randomUUID()}`],
      ['GET', `/api/lists/csv/restore/${randomUUID()}`],
      // An id that is no UUID names nothing, as on the workflow routes (until 2026-12-01: 422).
      ['GET', '/api/lists/csv/status/not-a-uuid'],
      ['POST', '/api/lists/csv/review/not-a-uuid'],
      ['GET', '/api/lists/csv/restore/not-a-uuid'],
    ] as const) {
      const r = await s.call(method, path, as(b.key), method === 'POST' ? {} : undefined);
      expect([method, path, r.status, r.json]).toEqual([method, path, 404, { detail: expect.stringMatching(/not found/) }]);
    }
    const other = await s.call('POST', '/company-search/database-search', as(b.key), { filter: { name: 'Acme GmbH' } });
    expect(other.json.count).toBe(0);
  });

  it('resumes an import a stopped process left, writing every row exactly once', async () => {
    const rows = Array.from({ length: 40 }, (_, i) => `Company ${i},https://c${i}.example,${i}`);
    const { threadId } = await analysed(`Company,Website,Employees\n${rows.join('\n')}\n`);
    const listId = await review(a.key, threadId);
    await until(a.key, threadId, 'completed');
    // A crash: three batches (21 rows) were written, but the checkpoint says two (14); the process holding the claim
    // is gone and its claim has expired; the import is left `processing`.
    await s.db.withTenant(a.tenantId, async (sql) => {
      await sql.query(`DELETE FROM agents.list_rows WHERE list_id = $1 AND position > 21`, [listId]);
      await sql.query(`UPDATE agents.lists SET status = 'processing' WHERE list_id = $1`, [listId]);
      await sql.query(
        `UPDATE agents.workflows SET status = 'processing', claimed_by = 'agents-gone', claimed_until = now() - interval '1 second',
                state = jsonb_set(state, '{imported_rows}', '14') WHERE thread_id = $1`,
        [threadId],
      );
    });
    const done = await until(a.key, threadId, 'completed');
    expect(done).toMatchObject({ imported_rows: 40, total_rows: 40, list_id: listId });
    const written = await s.db.withTenant(a.tenantId, (sql) =>
      sql.query<Json>(`SELECT count(*)::int AS n, count(DISTINCT entity_key)::int AS keys, min(position) AS lo, max(position) AS hi FROM agents.list_rows WHERE list_id = $1`, [listId]),
    );
    expect(written.rows[0]).toEqual({ n: 40, keys: 40, lo: 1, hi: 40 });

    // Left `importing` (accepted, never started) with no claim at all: the sweep starts it.
    await s.db.withTenant(a.tenantId, async (sql) => {
      await sql.query(`DELETE FROM agents.list_rows WHERE list_id = $1 AND position > 7`, [listId]);
      await sql.query(`UPDATE agents.workflows SET status = 'importing', claimed_by = NULL, claimed_until = NULL, state = jsonb_set(state, '{imported_rows}', '7') WHERE thread_id = $1`, [threadId]);
    });
    await until(a.key, threadId, 'completed');
    const again = await s.db.withTenant(a.tenantId, (sql) => sql.query<Json>(`SELECT count(*)::int AS n, count(DISTINCT entity_key)::int AS keys FROM agents.list_rows WHERE list_id = $1`, [listId]));
    expect(again.rows[0]).toEqual({ n: 40, keys: 40 });
    const restored = await s.call('GET', `/api/lists/csv/restore/${listId}`, as(a.key));
    expect((restored.json.table_structure.rows as Json[]).map((r) => r.id)).toEqual(Array.from({ length: 40 }, (_, i) => `row-${i + 2}`));
    // The directory holds each company once, however often its row was written.
    const dir = await s.call('POST', '/company-search/database-search', as(a.key), { filter: { website: { $regex: '^https://c[0-9]+\\.example$' } }, limit: 100 });
    expect(dir.json.count).toBe(40);
    expect((dir.json.data as Json[]).every((d) => d.source === `csv:${listId}`)).toBe(true);
  });

  it('imports a `__proto__` column like any other, cuts a long file name to 200 characters, and restores the rest after an offset', async () => {
    const { threadId, events: evs } = await analysed('__proto__,constructor,Name\nevil,ctor,Acme\nmore,ctor2,Beta\n', a.key, `${'p'.repeat(300)}.csv`);
    expect(evs[0]!.filename).toBe('p'.repeat(200));
    const listId = await review(a.key, threadId);
    await until(a.key, threadId, 'completed');
    const restored = await s.call('GET', `/api/lists/csv/restore/${listId}`, as(a.key));
    expect(restored.json.title).toBe('p'.repeat(200));
    const rows = restored.json.table_structure.rows as Json[];
    expect(rows.map((r) => Object.keys(r.cells as Json))).toEqual([
      ['__proto__', 'constructor', 'Name'],
      ['__proto__', 'constructor', 'Name'],
    ]);
    expect(Object.getOwnPropertyDescriptor(rows[0]!.cells, '__proto__')?.value).toMatchObject({ row_id: 'row-2', column_id: '__proto__', value: 'evil' });
    const rest = await s.call('GET', `/api/lists/csv/restore/${listId}?offset=1`, as(a.key));
    expect(rest.status).toBe(200);
    expect((rest.json.table_structure.rows as Json[]).map((r) => r.id)).toEqual(['row-3']);
    expect(rest.json.table_structure.current_count).toBe(2);
    const bad = await s.call('GET', `/api/lists/csv/restore/${listId}?offset=-1`, as(a.key));
    expect([bad.status, bad.json.detail[0].loc]).toEqual([422, ['query', 'offset']]);
    // Decimal digits only: `Number()`'s other forms were taken until 2026-11-30 (0x10 skipped 16 rows).
    for (const offset of ['0x10', '0b1', '1e3', '1e0', '%205', '5%20', '%2B1', '1.0', '-0', 'abc']) {
      const r = await s.call('GET', `/api/lists/csv/restore/${listId}?offset=${offset}`, as(a.key));
      expect([offset, r.status, r.json.detail]).toEqual([offset, 422, [{ loc: ['query', 'offset'], msg: 'offset must be an integer ≥ 0 in decimal digits (such as 0)', type: expect.any(String) }]]);
    }
    const repeated = await s.call('GET', `/api/lists/csv/restore/${listId}?offset=1&offset=1`, as(a.key));
    expect([repeated.status, repeated.json.detail]).toEqual([422, [{ loc: ['query', 'offset'], msg: 'give offset once (it is repeated)', type: expect.any(String) }]]);
    const tooFar = await s.call('GET', `/api/lists/csv/restore/${listId}?offset=10000001`, as(a.key));
    expect([tooFar.status, tooFar.json.detail[0].msg]).toEqual([422, 'offset is at most 10000000']);
    const padded = await s.call('GET', `/api/lists/csv/restore/${listId}?offset=01`, as(a.key));
    expect((padded.json.table_structure.rows as Json[]).map((r) => r.id)).toEqual(['row-3']);
  });

  it('analyses one upload at a time here: another is 429 for the tenant holding the slot, 503 for others, with Retry-After', async () => {
    const boundary = `lore-${randomUUID()}`;
    const body = multipart(boundary, [{ name: 'file', filename: 'slow.csv', type: 'text/csv', data: COMPANIES }]);
    const slow = request(new URL('/api/lists/csv/upload', s.gateway.publicUrl), {
      method: 'POST',
      headers: { ...as(a.key), 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(body.length) },
    });
    const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
      slow.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      slow.on('error', reject);
    });
    // Half the body: the upload holds its slot while it waits for the rest.
    slow.write(body.subarray(0, 60));
    const gate = s.agents.agents.csvImports.analyses;
    for (const deadline = Date.now() + 10_000; gate.size === 0 && Date.now() < deadline; ) await sleep(20);
    expect(gate.size).toBe(1);
    const busy = await upload(a.key, COMPANIES);
    expect([busy.status, busy.headers['retry-after'], busy.json]).toEqual([429, '5', { detail: expect.stringMatching(/most CSV uploads/) }]);
    const other = await upload(b.key, COMPANIES);
    expect([other.status, other.headers['retry-after'], other.json]).toEqual([503, '5', { detail: expect.stringMatching(/too many CSV uploads/) }]);
    slow.end(body.subarray(60));
    const done = await answered;
    expect(done.status).toBe(200);
    expect(events({ status: done.status, headers: {}, text: done.text, json: null }).map((e) => e.status)).toEqual(['analyzing', 'analyzing', 'ready_for_review']);
    // The slot is free again.
    expect((await analysed(COMPANIES, b.key)).last.status).toBe('ready_for_review');
  });
});
