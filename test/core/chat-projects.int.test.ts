/**
 * Chat projects through the gateway: a caller's own folders of sessions, the `project_id` filter of spec 2's
 * sessions listing, sessions moved in and out with PATCH, and a deleted project's sessions kept outside any project.
 * Project files: multipart upload (202, `processing`), polling until `completed` or `failed` with a reason, the
 * limits (413, 422, 409), owner isolation (404), delete, the restart sweep, and chat answers in a project citing its
 * files.
 */
import { randomUUID } from 'node:crypto';
import { pdfWithText } from '@lore/extract/scan-pdf';
import { PostgresBlobStore } from '@lore/runtime';
import { projectFileBlobKey } from '../../services/core/src/application/project-files';
import { insertProjectFiles } from '../../services/core/src/store/project-files';
import { closeIdleHttpConnections, http, type HttpResult } from '../support/http';
import type { TenantFixture } from '../gateway/harness';
import { multipart } from '../e2e/processes';
import { docx } from '../memory/files';
import { startCoreStack, type CoreStack } from './harness';

interface FilePart {
  name?: string;
  filename: string;
  type: string;
  data: Buffer | string;
}

/** A multipart/form-data body with the given file parts (named `files` unless said) and text fields. */
function form(files: FilePart[], fields: Record<string, string> = {}): { body: Buffer; type: string } {
  const boundary = `lore-${randomUUID()}`;
  const parts = [
    ...Object.entries(fields).map(([name, data]) => ({ name, data })),
    ...files.map((f) => ({ name: f.name ?? 'files', filename: f.filename, type: f.type, data: f.data })),
  ];
  return { body: multipart(boundary, parts), type: `multipart/form-data; boundary=${boundary}` };
}

/** Small limits, so the suite reaches every one of them with small files. */
const LIMITS = { maxFileBytes: 64 * 1024, maxUploadBytes: 100 * 1024, maxFilesPerUpload: 4, maxFilesPerProject: 6 };

describe('core: chat projects', () => {
  let s: CoreStack;
  let a: TenantFixture;
  let b: TenantFixture;
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  const ids = (r: { json: { sessions: Array<{ id: string }> } }) => r.json.sessions.map((x) => x.id);

  beforeAll(async () => {
    s = await startCoreStack({ projectFiles: { limits: LIMITS } });
    a = await s.tenant();
    b = await s.tenant();
  });
  afterAll(async () => {
    await s?.close();
    closeIdleHttpConnections();
  });

  it('files sessions in projects, filters the listing by them, and keeps the sessions of a deleted project', async () => {
    const created = await s.call('POST', '/api/chat/projects', as(a.key), { name: 'Launch', description: 'the spring launch' });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: 'Launch', description: 'the spring launch', session_count: 0 });
    const pid = created.json.id as number;

    const inProject = (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 0, project_id: pid })).json.chat_session_id as string;
    const outside = (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 0 })).json.chat_session_id as string;
    expect(ids(await s.call('GET', `/api/chat/get-user-chat-sessions?project_id=${pid}`, as(a.key)))).toEqual([inProject]);
    // Without project_id, project sessions are left out unless only_non_project_chats=false.
    const plain = ids(await s.call('GET', '/api/chat/get-user-chat-sessions', as(a.key)));
    expect(plain).toContain(outside);
    expect(plain).not.toContain(inProject);
    expect(ids(await s.call('GET', '/api/chat/get-user-chat-sessions?only_non_project_chats=false', as(a.key)))).toEqual(expect.arrayContaining([inProject, outside]));
    expect((await s.call('GET', `/api/chat/get-chat-session/${inProject}`, as(a.key))).json.project_id).toBe(pid);

    // Moving a session in and out.
    expect((await s.call('PATCH', `/api/chat/chat-session/${outside}`, as(a.key), { project_id: pid })).status).toBe(200);
    expect(ids(await s.call('GET', `/api/chat/get-user-chat-sessions?project_id=${pid}`, as(a.key))).sort()).toEqual([inProject, outside].sort());
    expect((await s.call('GET', `/api/chat/projects/${pid}`, as(a.key))).json.session_count).toBe(2);
    expect((await s.call('PATCH', `/api/chat/chat-session/${outside}`, as(a.key), { project_id: null })).status).toBe(200);
    expect((await s.call('GET', `/api/chat/get-chat-session/${outside}`, as(a.key))).json.project_id).toBeNull();

    const renamed = await s.call('PATCH', `/api/chat/projects/${pid}`, as(a.key), { name: 'Spring launch' });
    expect(renamed.json).toMatchObject({ name: 'Spring launch', description: 'the spring launch' });
    expect((await s.call('GET', '/api/chat/projects', as(a.key))).json.projects.map((p: { id: number }) => p.id)).toContain(pid);

    expect((await s.call('DELETE', `/api/chat/projects/${pid}`, as(a.key))).status).toBe(204);
    expect((await s.call('GET', `/api/chat/projects/${pid}`, as(a.key))).status).toBe(404);
    const kept = await s.call('GET', `/api/chat/get-chat-session/${inProject}`, as(a.key));
    expect(kept.status).toBe(200);
    expect(kept.json.project_id).toBeNull();
    expect(ids(await s.call('GET', '/api/chat/get-user-chat-sessions', as(a.key)))).toContain(inProject);
  });

  it('keeps projects to their owner: another key or tenant gets 404 and cannot file sessions in them', async () => {
    const pid = (await s.call('POST', '/api/chat/projects', as(a.key), { name: 'Private' })).json.id as number;
    const other = await s.key(a.tenantId);
    for (const key of [other, b.key]) {
      expect((await s.call('GET', `/api/chat/projects/${pid}`, as(key))).status).toBe(404);
      // Nor does the sessions listing take it as a filter (it was an empty list, unlike every other project route).
      expect(await s.call('GET', `/api/chat/get-user-chat-sessions?project_id=${pid}`, as(key))).toMatchObject({ status: 404, json: { detail: expect.stringContaining('project') } });
      expect((await s.call('GET', '/api/chat/projects', as(key))).json.projects.map((p: { id: number }) => p.id)).not.toContain(pid);
      const r = await s.call('POST', '/api/chat/create-chat-session', as(key), { persona_id: 0, project_id: pid });
      expect(r.status).toBe(404);
      expect(r.json).toEqual({ detail: expect.any(String) });
      const made = await s.call('POST', '/api/chat/create-chat-session', as(key), { persona_id: 0 });
      expect(made.status).toBe(200);
      const own = made.json.chat_session_id as string;
      expect((await s.call('PATCH', `/api/chat/chat-session/${own}`, as(key), { project_id: pid })).status).toBe(404);
      expect((await s.call('DELETE', `/api/chat/projects/${pid}`, as(key))).status).toBe(404);
    }
    expect((await s.call('GET', `/api/chat/projects/${pid}`, as(a.key))).status).toBe(200);
  });

  it('holds an owner to 500 projects, concurrent creates included, and lists at most 500', async () => {
    const t = await s.tenant();
    const first = await s.call('POST', '/api/chat/projects', as(t.key), { name: 'First' });
    expect(first.status).toBe(201);
    const owner = (await s.db.withTenant(t.tenantId, (sql) => sql.query<{ owner: string }>(`SELECT owner FROM core.chat_projects WHERE project_id = $1`, [first.json.id]))).rows[0]!.owner;
    const fill = (n: number) => s.db.withTenant(t.tenantId, (sql) => sql.query(`INSERT INTO core.chat_projects (tenant_id, owner, name) SELECT $1, $2, 'filled ' || i FROM generate_series(1, $3) i`, [t.tenantId, owner, n]));
    // Written directly up to 10 below the cap (the real one): 20 at once, counted under a lock, let exactly 10 through.
    await fill(489);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => s.call('POST', '/api/chat/projects', as(t.key), { name: `Race ${i}` })));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(10);
    for (const r of answers.filter((x) => x.status !== 201)) expect([r.status, r.json]).toEqual([409, { detail: expect.stringMatching(/500 chat projects, the most one may have/) }]);
    const list = async () => (await s.call('GET', '/api/chat/projects', as(t.key))).json.projects as Array<{ id: number }>;
    expect(await list()).toHaveLength(500);
    // Another key of the tenant is another owner; deleting one frees a place.
    expect((await s.call('POST', '/api/chat/projects', as(await s.key(t.tenantId)), { name: 'Elsewhere' })).status).toBe(201);
    expect((await s.call('DELETE', `/api/chat/projects/${first.json.id}`, as(t.key))).status).toBe(204);
    expect((await s.call('POST', '/api/chat/projects', as(t.key), { name: 'Again' })).status).toBe(201);
    expect((await s.call('POST', '/api/chat/projects', as(t.key), { name: 'One more' })).status).toBe(409);
    // Projects past the cap (made before it existed) are not listed: the answer stays bounded, oldest first.
    await fill(5);
    const listed = await list();
    expect(listed).toHaveLength(500);
    expect(listed.map((p) => p.id)).toEqual([...listed.map((p) => p.id)].sort((x, y) => x - y));
  });

  it('still has the default persona after a new tenant\'s first chat request was refused inside its transaction', async () => {
    const c = await s.tenant();
    // The first request of the tenant writes persona 0; the refusal rolls its own transaction back, not that write.
    expect((await s.call('POST', '/api/chat/create-chat-session', as(c.key), { persona_id: 0, project_id: 424242 })).status).toBe(404);
    expect((await s.call('POST', '/api/chat/create-chat-session', as(c.key), { persona_id: 0 })).status).toBe(200);
    expect((await s.call('GET', '/api/persona/0', as(c.key))).status).toBe(200);
  });

  it('refuses bad input with spec 2\'s shapes', async () => {
    expect((await s.call('POST', '/api/chat/projects', as(a.key), { name: '' })).status).toBe(422);
    expect((await s.call('POST', '/api/chat/projects', as(a.key), { name: 'x', extra: 1 })).status).toBe(422);
    const bad = await s.call('GET', '/api/chat/projects/abc', as(a.key));
    expect(bad.status).toBe(422);
    expect(bad.json.detail[0].loc).toEqual(['path', 'project_id']);
    expect((await s.call('GET', '/api/chat/get-user-chat-sessions?project_id=x', as(a.key))).status).toBe(422);
    expect((await s.call('PATCH', '/api/chat/projects/1', as(a.key), {})).status).toBe(422);
  });

  // ---- project files ----

  const project = async (key: string, name = 'Files'): Promise<number> => (await s.call('POST', '/api/chat/projects', as(key), { name })).json.id as number;

  function upload(key: string, pid: number | string, files: FilePart[], fields?: Record<string, string>): Promise<HttpResult> {
    const { body, type } = form(files, fields);
    return http(s.gateway.publicUrl, 'POST', `/api/chat/projects/${pid}/files`, { headers: { ...as(key), 'content-type': type }, raw: body });
  }

  /** Polls the project's statuses until no file is `processing`. */
  async function settled(key: string, pid: number): Promise<Array<Record<string, any>>> {
    for (let i = 0; i < 150; i++) {
      const r = await s.call('GET', `/api/chat/projects/${pid}/files`, as(key));
      expect(r.status).toBe(200);
      const files = r.json.files as Array<Record<string, any>>;
      if (files.every((f) => f.status !== 'processing')) return files;
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error('project files still processing');
  }

  it('uploads files (202, processing), extracts them in the background, and answers their statuses', async () => {
    const pid = await project(a.key);
    const runbook = 'The Kestrel hangar opens at dawn.\n\nCrews badge in at gate four.';
    const r = await upload(a.key, pid, [
      { filename: 'runbook.txt', type: 'text/plain', data: runbook },
      { filename: 'report.pdf', type: 'application/pdf', data: pdfWithText(['Quarterly report', 'Revenue grew in the northern region.']) },
      { name: 'file', filename: 'minutes.docx', type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', data: await docx(['Board minutes', 'The budget was approved.']) },
    ], { note: 'ignored' });
    expect(r.status).toBe(202);
    expect(r.json.files.map((f: Record<string, any>) => [f.name, f.status, f.project_id])).toEqual([
      ['runbook.txt', 'processing', pid],
      ['report.pdf', 'processing', pid],
      ['minutes.docx', 'processing', pid],
    ]);
    const first = r.json.files[0] as Record<string, any>;
    expect(Object.keys(first).sort()).toEqual(['content_type', 'error', 'id', 'name', 'project_id', 'size_bytes', 'status', 'time_created', 'time_updated', 'token_count']);
    expect(first).toMatchObject({ content_type: 'text/plain', size_bytes: Buffer.byteLength(runbook), error: null, token_count: null });

    const files = await settled(a.key, pid);
    expect(files.map((f) => [f.name, f.status, f.error])).toEqual([
      ['runbook.txt', 'completed', null],
      ['report.pdf', 'completed', null],
      ['minutes.docx', 'completed', null],
    ]);
    for (const f of files) expect(f.token_count).toBeGreaterThan(3);
    const one = await s.call('GET', `/api/chat/projects/${pid}/files/${files[1]!.id}`, as(a.key));
    expect(one.status).toBe(200);
    expect(one.json).toEqual(files[1]);
    // Upload-status polling of chosen files.
    const chosen = await s.call('GET', `/api/chat/projects/${pid}/files?file_ids=${files[2]!.id},${files[0]!.id}`, as(a.key));
    expect(chosen.json.files.map((f: Record<string, any>) => f.name)).toEqual(['runbook.txt', 'minutes.docx']);
    // The bytes are gone once the text is kept.
    const blobs = new PostgresBlobStore(s.db);
    for (const f of files) expect(await blobs.get(a.tenantId, projectFileBlobKey(a.tenantId, f.id))).toBeNull();
  });

  it('fails a file it cannot read with the reason, and keeps the others', async () => {
    const pid = await project(a.key);
    const r = await upload(a.key, pid, [
      { filename: 'photo.png', type: 'image/png', data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
      { filename: 'broken.pdf', type: 'application/pdf', data: '%PDF-1.7 the rest is missing' },
      { filename: 'empty.txt', type: 'text/plain', data: ' \n ' },
      { filename: 'data.json', type: 'application/json', data: '{"region":"eu"}' },
    ]);
    expect(r.status).toBe(202);
    const files = await settled(a.key, pid);
    expect(files.map((f) => [f.name, f.status])).toEqual([
      ['photo.png', 'failed'],
      ['broken.pdf', 'failed'],
      ['empty.txt', 'failed'],
      ['data.json', 'completed'],
    ]);
    expect(files[0]!.error).toBe('this type of file cannot be read (image/png (no OCR engine))');
    expect(files[1]!.error).toMatch(/PDF/);
    expect(files[1]!.error).not.toMatch(/\/|at /);
    expect(files[2]!.error).toBe('no text could be extracted from the file');
  });

  it('keeps project files to their owner: another key or tenant gets 404 for the project and its files', async () => {
    const pid = await project(a.key);
    const up = await upload(a.key, pid, [{ filename: 'secret.txt', type: 'text/plain', data: 'The vault code is 4411.' }]);
    const fid = up.json.files[0].id as string;
    await settled(a.key, pid);
    const other = await s.key(a.tenantId);
    for (const key of [other, b.key]) {
      const listed = await s.call('GET', `/api/chat/projects/${pid}/files`, as(key));
      expect(listed.status).toBe(404);
      expect(listed.json).toEqual({ detail: expect.any(String) });
      expect((await s.call('GET', `/api/chat/projects/${pid}/files/${fid}`, as(key))).status).toBe(404);
      expect((await s.call('DELETE', `/api/chat/projects/${pid}/files/${fid}`, as(key))).status).toBe(404);
      const refused = await upload(key, pid, [{ filename: 'x.txt', type: 'text/plain', data: 'x' }]);
      expect(refused.status).toBe(404);
      expect(refused.json).toEqual({ detail: 'chat project not found' });
    }
    expect((await s.call('GET', `/api/chat/projects/${pid}/files`, as(a.key))).json.files).toHaveLength(1);
    // A read-only key may poll but not upload.
    const readOnly = await s.key(a.tenantId, { scopes: { access: 'read' } });
    expect((await upload(readOnly, pid, [{ filename: 'x.txt', type: 'text/plain', data: 'x' }])).status).toBe(403);
  });

  it('refuses bad uploads with clear 4xx answers in spec 2\'s shapes, storing nothing', async () => {
    const pid = await project(a.key);
    const big = Buffer.alloc(LIMITS.maxFileBytes + 1, 'a');
    const tooLarge = await upload(a.key, pid, [{ filename: 'big.txt', type: 'text/plain', data: big }]);
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.json).toEqual({ detail: `a file may hold ${LIMITS.maxFileBytes} bytes at most` });
    const half = Buffer.alloc(60 * 1024, 'b');
    const together = await upload(a.key, pid, [
      { filename: 'one.txt', type: 'text/plain', data: half },
      { filename: 'two.txt', type: 'text/plain', data: half },
    ]);
    expect(together.status).toBe(413);
    expect(together.json).toEqual({ detail: `the files of one upload may hold ${LIMITS.maxUploadBytes} bytes together` });
    const many = await upload(a.key, pid, Array.from({ length: LIMITS.maxFilesPerUpload + 1 }, (_, i) => ({ filename: `f${i}.txt`, type: 'text/plain', data: `file ${i}` })));
    expect(many.status).toBe(422);
    expect(many.json).toEqual({ detail: [{ loc: ['body', 'files'], msg: `at most ${LIMITS.maxFilesPerUpload} files per upload`, type: 'value_error' }] });
    const none = await upload(a.key, pid, [], { note: 'no file' });
    expect(none.status).toBe(422);
    expect(none.json.detail[0].loc).toEqual(['body', 'files']);
    const json = await s.call('POST', `/api/chat/projects/${pid}/files`, as(a.key), { files: [] });
    expect(json.status).toBe(415);
    expect(json.json).toEqual({ detail: expect.any(String) });
    const malformed = await http(s.gateway.publicUrl, 'POST', `/api/chat/projects/${pid}/files`, {
      headers: { ...as(a.key), 'content-type': 'multipart/form-data; boundary=xyz' },
      raw: '--xyz\r\ncontent-disposition: form-data; name="files"; filename="a.txt"\r\n\r\nunterminated',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.json).toEqual({ detail: expect.any(String) });
    expect((await upload(a.key, 999_999, [{ filename: 'x.txt', type: 'text/plain', data: 'x' }])).status).toBe(404);
    const badProject = await upload(a.key, 'abc', [{ filename: 'x.txt', type: 'text/plain', data: 'x' }]);
    expect(badProject.status).toBe(422);
    expect(badProject.json.detail[0].loc).toEqual(['path', 'project_id']);
    const badFile = await s.call('GET', `/api/chat/projects/${pid}/files/not-a-uuid`, as(a.key));
    expect(badFile.status).toBe(422);
    expect(badFile.json.detail[0].loc).toEqual(['path', 'file_id']);
    expect((await s.call('GET', `/api/chat/projects/${pid}/files?file_ids=x`, as(a.key))).status).toBe(422);
    expect((await s.call('GET', `/api/chat/projects/${pid}/files/${randomUUID()}`, as(a.key))).status).toBe(404);
    // Nothing of the refused uploads was kept.
    expect((await s.call('GET', `/api/chat/projects/${pid}/files`, as(a.key))).json.files).toEqual([]);
    const leftovers = await s.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM core.project_file_jobs WHERE tenant_id = $1`, [a.tenantId]);
    expect(leftovers.rows[0]!.n).toBe(0);

    // A project holds at most maxFilesPerProject files: the upload that would pass it is 409, whole.
    const small = (n: number) => Array.from({ length: n }, (_, i) => ({ filename: `n${i}.txt`, type: 'text/plain', data: `note ${i}` }));
    expect((await upload(a.key, pid, small(4))).status).toBe(202);
    const full = await upload(a.key, pid, small(3));
    expect(full.status).toBe(409);
    expect(full.json).toEqual({ detail: `a project holds at most ${LIMITS.maxFilesPerProject} files; this one has 4` });
    expect((await upload(a.key, pid, small(2))).status).toBe(202);
    expect((await settled(a.key, pid))).toHaveLength(6);
  });

  it('deletes a file (204), then it is 404; deleting the project takes its files', async () => {
    const pid = await project(a.key);
    const up = await upload(a.key, pid, [
      { filename: 'keep.txt', type: 'text/plain', data: 'keep me' },
      { filename: 'drop.txt', type: 'text/plain', data: 'drop me' },
    ]);
    const [keep, drop] = up.json.files as Array<Record<string, any>>;
    await settled(a.key, pid);
    expect((await s.call('DELETE', `/api/chat/projects/${pid}/files/${drop!.id}`, as(a.key))).status).toBe(204);
    expect((await s.call('GET', `/api/chat/projects/${pid}/files/${drop!.id}`, as(a.key))).status).toBe(404);
    expect((await s.call('DELETE', `/api/chat/projects/${pid}/files/${drop!.id}`, as(a.key))).status).toBe(404);
    expect((await s.call('GET', `/api/chat/projects/${pid}/files`, as(a.key))).json.files.map((f: Record<string, any>) => f.id)).toEqual([keep!.id]);
    expect((await s.call('DELETE', `/api/chat/projects/${pid}`, as(a.key))).status).toBe(204);
    const gone = await s.db.withTenant(a.tenantId, (sql) => sql.query(`SELECT 1 FROM core.chat_project_files WHERE tenant_id = $1 AND project_id = $2`, [a.tenantId, pid]));
    expect(gone.rowCount).toBe(0);
  });

  it('a sweep finishes a file whose process stopped mid-way, and fails one that stopped it every time', async () => {
    const pid = await project(a.key);
    const blobs = new PostgresBlobStore(s.db);
    const owner = (await s.db.withTenant(a.tenantId, (sql) => sql.query<{ owner: string }>(`SELECT owner FROM core.chat_projects WHERE tenant_id = $1 AND project_id = $2`, [a.tenantId, pid]))).rows[0]!.owner;
    // As a process that accepted two files and stopped before extracting them: rows, jobs with a spent lease, bytes.
    const orphan = randomUUID();
    const poison = randomUUID();
    for (const id of [orphan, poison]) await blobs.put(a.tenantId, projectFileBlobKey(a.tenantId, id), Buffer.from('Left behind by a stopped process.'), 'text/plain');
    await s.db.withTenant(a.tenantId, (sql) =>
      insertProjectFiles(sql, a.tenantId, pid, owner, [
        { file_id: orphan, name: 'orphan.txt', content_type: 'text/plain', size_bytes: 33 },
        { file_id: poison, name: 'poison.txt', content_type: 'text/plain', size_bytes: 33 },
      ], -1_000),
    );
    await s.db.query(`UPDATE core.project_file_jobs SET attempts = 3 WHERE tenant_id = $1 AND file_id = $2`, [a.tenantId, poison]);
    const runner = s.core.core.projectFiles.runner;
    expect(await runner.sweep()).toBeGreaterThanOrEqual(2);
    await runner.idle();
    const files = await settled(a.key, pid);
    expect(files.map((f) => [f.name, f.status, f.error])).toEqual([
      ['orphan.txt', 'completed', null],
      ['poison.txt', 'failed', 'the file could not be processed (3 attempts)'],
    ]);
    for (const id of [orphan, poison]) expect(await blobs.get(a.tenantId, projectFileBlobKey(a.tenantId, id))).toBeNull();
  });

  it('answers a chat message in a project from its files, citing them; a session outside the project does not see them', async () => {
    const pid = await project(a.key, 'Hangar');
    const up = await upload(a.key, pid, [
      { filename: 'hangar-rules.txt', type: 'text/plain', data: 'Hangar rules.\n\nThe Kestrel hangar opens at dawn for the night crews.\n\nVisitors sign in at gate four.' },
      { filename: 'budget.pdf', type: 'application/pdf', data: pdfWithText(['Budget 2026', 'The hangar roof repair costs forty thousand euros.']) },
    ]);
    const fileIds = (up.json.files as Array<{ id: string }>).map((f) => f.id);
    await settled(a.key, pid);
    // The memory knows the hangar too, so the answer's search finds a document besides the project's files.
    const memo = await s.call('POST', '/api/v1/memory/ingest', { 'x-api-key': a.key }, { content: 'Kestrel hangar note: the night crews open the hangar doors at dawn.', content_type: 'text', routing: { mode: 'auto' } });
    expect(memo.status).toBe(200);
    for (let i = 0; i < 200; i++) {
      const found = await s.call('POST', '/api/v1/memory/retrieve', { 'x-api-key': a.key }, { query: 'When does the Kestrel hangar open?' });
      if ((found.json.chunks as Array<{ document_id: string }>).some((c) => c.document_id === memo.json.doc_id)) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    const inProject = (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 0, project_id: pid })).json.chat_session_id as string;
    const r = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'When does the Kestrel hangar open?', chat_session_id: inProject, stream: false });
    expect(r.status).toBe(200);
    expect(r.json.error_msg).toBeNull();
    expect(r.json.answer_citationless).toMatch(/opens at dawn/);
    const fileDocs = (r.json.top_documents as Array<Record<string, any>>).filter((d) => d.source_type === 'file');
    expect(fileDocs.map((d) => d.semantic_identifier)).toEqual(expect.arrayContaining(['hangar-rules.txt', 'budget.pdf']));
    expect(fileDocs[0]).toMatchObject({ document_id: fileIds[0], semantic_identifier: 'hangar-rules.txt', link: `/api/chat/projects/${pid}/files/${fileIds[0]}`, metadata: { project_id: String(pid), file_id: fileIds[0] } });
    expect(r.json.citation_info).toContainEqual({ citation_num: expect.any(Number), document_id: fileIds[0] });
    // The tool call records the search's documents, not the project's files.
    for (const call of r.json.tool_calls as Array<{ search_docs: Array<{ document_id: string }> }>) expect(call.search_docs.map((d) => d.document_id)).not.toContain(fileIds[0]);
    expect(r.json.tool_calls[0].search_docs.map((d: { document_id: string }) => d.document_id)).toContain(memo.json.doc_id);
    // The stored answer shows the same documents and tool calls (a call's documents are stored once, as a slice of
    // the message's, after the files').
    const stored = (await s.call('GET', `/api/chat/get-chat-session/${inProject}`, as(a.key))).json.messages.find((m: { message_id: number }) => m.message_id === r.json.message_id);
    expect(stored.documents).toEqual(r.json.top_documents);
    expect(stored.tool_calls).toEqual(r.json.tool_calls);

    // Streamed: the files' passages come as the first search documents part.
    const streamed = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'How much does the hangar roof repair cost?', chat_session_id: inProject });
    const parts = streamed.text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as { type: string; top_documents?: Array<{ document_id: string }> });
    expect(parts[0]!.type).toBe('message_start');
    expect(parts[1]!.type).toBe('search_documents');
    expect(parts[1]!.top_documents![0]!.document_id).toBe(fileIds[1]);
    expect(parts.filter((p) => p.type === 'answer_delta').length).toBeGreaterThan(0);

    // A source filter without `file` leaves them out; a session outside the project never has them.
    const filtered = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'When does the Kestrel hangar open?', chat_session_id: inProject, stream: false, internal_search_filters: { source_type: ['web'] } });
    expect(filtered.json.top_documents.filter((d: Record<string, any>) => d.source_type === 'file')).toEqual([]);
    const outside = (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 0 })).json.chat_session_id as string;
    const plain = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'When does the Kestrel hangar open?', chat_session_id: outside, stream: false });
    expect(plain.json.top_documents.map((d: Record<string, any>) => d.document_id)).not.toContain(fileIds[0]);
  });
});
