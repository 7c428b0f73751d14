import type { Identity } from '@lore/runtime';
import { getGraph, getJob, insertGraph, insertJob, refreshGraphCounts, setGraphStatus, setJobStatus } from '../../store/knowledge-graphs';
import { startGraphTestStack, type GraphTestStack } from '../../test-stack';

/**
 * Spec 2's knowledge-graph routes on PGlite, straight to the graph's listener (a signed identity, no gateway): what
 * the body readers refuse and how, the shape of what no route answers under `/memory/*`, and the times a job's long
 * transaction writes. The worker is not started: the jobs stay queued, which these tests do not need.
 */
describe('knowledge graphs (PGlite, the graph\'s own listener)', () => {
  let stack: GraphTestStack;
  const tenant = 't_kg_unit';
  const who: Identity = { tenant_id: tenant, workspace_id: 'ws_kg', memory_id: 'm_kg', credential: 'ck_test', subject: 'key_kg', role: 'admin' };

  beforeAll(async () => {
    stack = await startGraphTestStack('knowledge-graphs', { worker: false });
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
  });

  async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
    const headers: Record<string, string> = await stack.identify(who);
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${stack.server.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  }

  /** A multipart body of these parts in this order: a text field, or a file part when `filename` is set. */
  async function multipart(parts: Array<{ name: string; value: string; filename?: string }>): Promise<{ status: number; body: any }> {
    const boundary = `----lore${Math.random().toString(16).slice(2)}`;
    const chunks = parts.map((p) => {
      const disposition = `form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`;
      const type = p.filename === undefined ? '' : 'Content-Type: text/csv\r\n';
      return `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n${p.value}\r\n`;
    });
    const res = await fetch(`${stack.server.url}/memory/upload`, {
      method: 'POST',
      headers: { ...(await stack.identify(who)), 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: `${chunks.join('')}--${boundary}--\r\n`,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  const locs = (body: { detail: Array<{ loc: unknown[] }> }) => body.detail.map((d) => d.loc.join('.')).sort();

  async function newGraph(name: string): Promise<string> {
    const r = await call('POST', '/memory/departments/create', { name });
    expect(r.status).toBe(200);
    return r.body.graph_id as string;
  }

  describe('what no route answers', () => {
    it('answers spec 2\'s {detail} under /memory/*: 404 for an unknown path, 405 with Allow for an undeclared method', async () => {
      const graphId = await newGraph('Shapes');
      for (const path of ['/memory/departments/', '/memory/jobs', '/memory/nothing/here', '/memory']) {
        const r = await call('GET', path);
        expect([path, r.status, r.body]).toEqual([path, 404, { detail: 'route not found' }]);
      }
      const put = await call('PUT', `/memory/departments/${graphId}`, { name: 'x' });
      expect([put.status, put.body]).toEqual([405, { detail: expect.stringMatching(/^method PUT is not allowed on this path \(allowed: .*DELETE/) }]);
      expect(put.headers.get('allow')).toMatch(/GET/);
      const chat = await call('GET', '/memory/chat');
      expect([chat.status, chat.body]).toEqual([405, { detail: expect.stringMatching(/^method GET is not allowed/) }]);
    });

    it('keeps the platform envelope on spec 1\'s /api/v1/memory/* and every other path', async () => {
      for (const path of ['/api/v1/memory/nothing', '/memoryx', '/internal/v1/nothing']) {
        const r = await call('GET', path);
        expect([path, r.status, r.body]).toEqual([path, 404, { error: { code: 'NOT_FOUND', message: 'route not found', request_id: expect.any(String) } }]);
      }
      const wrong = await call('GET', '/api/v1/memory/search');
      expect([wrong.status, wrong.body.error?.code]).toEqual([405, 'METHOD_NOT_ALLOWED']);
    });
  });

  describe('POST /memory/upload', () => {
    const csv = 'Name,Company\nAda Lovelace,Initech\n';

    it('takes the file part in either order with list_id', async () => {
      const graphId = await newGraph('Either order');
      const fileFirst = await multipart([{ name: 'file', value: csv, filename: 'a.csv' }, { name: 'list_id', value: graphId }]);
      expect([fileFirst.status, fileFirst.body.status]).toEqual([200, 'queued']);
      const idFirst = await multipart([{ name: 'list_id', value: graphId }, { name: 'file', value: csv, filename: 'b.csv' }]);
      expect([idFirst.status, idFirst.body.status]).toEqual([200, 'queued']);
    });

    it('refuses a file part of another name at its own loc, before or after `file`, and never drops the real file', async () => {
      const graphId = await newGraph('Other parts');
      // list_id sent as a file, before the file: only list_id is wrong (before, "file is required" too).
      const idAsFile = await multipart([{ name: 'list_id', value: graphId, filename: 'id.txt' }, { name: 'file', value: csv, filename: 'people.csv' }]);
      expect(idAsFile.status).toBe(422);
      expect(idAsFile.body.detail).toEqual([{ loc: ['body', 'list_id'], msg: 'list_id must be a text field, not a file', type: 'value_error' }]);
      for (const order of ['before', 'after'] as const) {
        const attachment = { name: 'attachment', value: 'x', filename: 'x.csv' };
        const file = { name: 'file', value: csv, filename: 'people.csv' };
        const r = await multipart([...(order === 'before' ? [attachment, file] : [file, attachment]), { name: 'list_id', value: graphId }]);
        expect([order, r.status, locs(r.body)]).toEqual([order, 422, ['body.attachment']]);
        expect(r.body.detail[0].msg).toMatch(/the table goes in the part named "file"/);
      }
    });

    it('takes one `file` part: a second one, or `file` as a text field, is refused at body.file', async () => {
      const graphId = await newGraph('One file');
      const two = await multipart([{ name: 'file', value: csv, filename: 'a.csv' }, { name: 'file', value: csv, filename: 'b.csv' }, { name: 'list_id', value: graphId }]);
      expect([two.status, two.body.detail]).toEqual([422, [{ loc: ['body', 'file'], msg: expect.stringMatching(/^one file per upload/), type: 'value_error' }]]);
      const text = await multipart([{ name: 'file', value: csv }, { name: 'list_id', value: graphId }]);
      expect([text.status, text.body.detail]).toEqual([422, [{ loc: ['body', 'file'], msg: expect.stringMatching(/must be a file part/), type: 'value_error' }]]);
    });

    it('refuses a body past 25 parts or 20 text fields whole, instead of dropping the later parts; 20 text fields pass', async () => {
      const graphId = await newGraph('Many parts');
      const fields = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `note${i}`, value: 'x' }));
      const file = { name: 'file', value: csv, filename: 'a.csv' };
      const list = { name: 'list_id', value: graphId };
      const tooMany = { loc: ['body'], msg: 'an upload holds at most 25 parts, at most 20 of them text fields: send "file", "list_id" and fewer other parts', type: 'value_error' };
      // Before, the 21st text field on (here list_id) was dropped unread: "list_id is required".
      for (const [name, parts] of [
        ['21 text fields', [...fields(20), list, file]],
        ['23 text fields', [...fields(23), list, file]],
        ['26 parts', [...Array.from({ length: 5 }, (_, i) => ({ name: `extra${i}`, value: 'x', filename: `x${i}.csv` })), ...fields(19), list, file]],
      ] as const) {
        const r = await multipart([...parts]);
        expect([name, r.status, r.body.detail]).toEqual([name, 422, [tooMany]]);
      }
      const atLimit = await multipart([...fields(19), list, file]);
      expect([atLimit.status, atLimit.body.status]).toEqual([200, 'queued']);
    });

    it('refuses a list_id sent twice (which graph was meant is unknown), whatever the values', async () => {
      const graphId = await newGraph('Twice');
      for (const second of [graphId, 'another']) {
        const r = await multipart([{ name: 'list_id', value: graphId }, { name: 'file', value: csv, filename: 'a.csv' }, { name: 'list_id', value: second }]);
        expect([second, r.status, r.body.detail]).toEqual([second, 422, [{ loc: ['body', 'list_id'], msg: 'list_id is sent more than once: send it once', type: 'value_error' }]]);
      }
    });

    it('takes list_id as sent, as every other route takes a graph id: one with spaces around it names no graph', async () => {
      const graphId = await newGraph('Untrimmed');
      const padded = await multipart([{ name: 'file', value: csv, filename: 'a.csv' }, { name: 'list_id', value: ` ${graphId} ` }]);
      expect([padded.status, padded.body]).toEqual([404, { detail: 'graph not found' }]);
      expect((await call('POST', '/memory/chat', { listId: ` ${graphId} `, question: 'Who works at Initech?' })).status).toBe(404);
    });
  });

  describe('validation', () => {
    it('says which limit an over-long column id or cell key of generate breaks', async () => {
      const long = 'Company very long header '.padEnd(280, 'x');
      const r = await call('POST', '/memory/generate', {
        listId: 'kg-long-columns',
        records: [{ cells: { [long]: { value: 'Initech' }, website: { value: 'initech.example' } } }],
        columns: [{ id: long, header: 'Company', type: 'fixed' }, { id: 'website', header: 'Website', type: 'fixed' }],
      });
      expect(r.status).toBe(422);
      expect(r.body.detail).toEqual([
        { loc: ['body', 'records', 0, 'cells', long], msg: 'a cell\'s key is a column id, at most 200 characters', type: 'value_error' },
        { loc: ['body', 'columns', 0, 'id'], msg: 'a column id is at most 200 characters', type: 'value_error' },
      ]);
    });

    it('refuses connector sources Lore does not have, naming those it has, and an empty list of sources', async () => {
      const unknown = await call('POST', '/memory/ingest/connectors', { list_id: 'kg-sources', source_types: ['web', 'nonexistent_source'], graph_name: 'Sources' });
      expect(unknown.status).toBe(422);
      expect(unknown.body.detail).toEqual([
        { loc: ['body', 'source_types', 1], msg: '"nonexistent_source" is not a connector source: the sources are web, file, google_drive', type: 'value_error' },
      ]);
      const none = await call('POST', '/memory/ingest/connectors', { list_id: 'kg-sources', source_types: [], graph_name: 'Sources' });
      expect([none.status, locs(none.body)]).toEqual([422, ['body.source_types']]);
      const known = await call('POST', '/memory/ingest/connectors', { list_id: 'kg-sources', source_types: ['web', 'file', 'google_drive'], graph_name: 'Sources' });
      expect([known.status, known.body.status]).toEqual([200, 'queued']);
    });
  });

  describe('the times a job writes', () => {
    it('are when its long transaction wrote them: finished_at and the graph\'s updated_at after the work, not at its start', async () => {
      const graphId = 'kg-times';
      const jobId = 'gj_kg_times';
      const pause = 400;
      const began = Date.now();
      await stack.db.withTenant(tenant, async (sql) => {
        await insertGraph(sql, tenant, { graph_id: graphId, name: 'Times', description: '', source_type: 'list' });
        await insertJob(sql, tenant, { job_id: jobId, graph_id: graphId, kind: 'generate', message: 'queued', params: {} });
        await setJobStatus(sql, tenant, jobId, 'running', 'running');
        // The job's work, inside its one transaction.
        await new Promise((r) => setTimeout(r, pause));
        await refreshGraphCounts(sql, tenant, graphId);
        await setJobStatus(sql, tenant, jobId, 'completed', 'done', {});
        await setGraphStatus(sql, tenant, graphId, 'ready', null);
      });
      const ended = Date.now();
      const { job, g } = await stack.db.withTenant(tenant, async (sql) => ({ job: await getJob(sql, tenant, jobId), g: await getGraph(sql, tenant, graphId) }));
      const at = (iso: string | null | undefined) => new Date(iso ?? 0).getTime();
      // The row's own creation is the transaction's start; its end is after the pause.
      expect(at(job?.created_at)).toBeLessThan(began + pause / 2);
      expect(at(job?.started_at)).toBeLessThan(began + pause / 2);
      for (const t of [at(job?.finished_at), at(job?.updated_at), at(g?.updated_at)]) {
        expect(t).toBeGreaterThanOrEqual(began + pause - 5);
        expect(t).toBeLessThanOrEqual(ended + 5);
      }
    });
  });
});
