/**
 * `file` connectors end to end on real PostgreSQL, Redis and Kafka, through the gateway: an administrator uploads
 * files (`POST /api/manage/admin/connector/file/upload`), creates a `file` connector with the answered paths, runs
 * it, and the memory finds the files' words; bad uploads get clear 4xx answers and keep nothing; a connector names
 * only files uploaded to its own tenant, within its maker's reach; deleting the last connector that names a file deletes it. See "Connector
 * files" in docs/core.md.
 */
import { randomUUID } from 'node:crypto';
import { pdfWithText } from '@lore/extract/scan-pdf';
import { PostgresBlobStore } from '@lore/runtime';
import { multipart } from '../e2e/processes';
import type { TenantFixture } from '../gateway/harness';
import { closeIdleHttpConnections, http, type HttpResult } from '../support/http';
import { uniqueSuffix } from '../support/infra';
import { type CoreStack, eventually, startCoreStack } from './harness';

jest.setTimeout(120_000);

type Json = Record<string, any>;
const as = (key: string) => ({ authorization: `Bearer ${key}` });
const UPLOAD = '/api/manage/admin/connector/file/upload';
/** `connector-files/<workspace>/<memory>/<uuid>/<name>`: the uploader's workspace and memory, then the file's own id and name. */
const PATH = /^connector-files\/ws_[A-Za-z0-9_-]+\/[A-Za-z0-9._-]+\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/(.+)$/;

/** Small limits, so the suite reaches them with small files. */
const LIMITS = { maxFileBytes: 64 * 1024, maxUploadBytes: 100 * 1024, maxFilesPerUpload: 4 };

interface FilePart {
  name?: string;
  filename: string;
  type?: string;
  data: Buffer | string;
}


describe('core: file connectors', () => {
  let s: CoreStack;
  let a: TenantFixture;
  let b: TenantFixture;

  beforeAll(async () => {
    s = await startCoreStack({ indexer: {}, connectorFiles: { limits: LIMITS } });
    a = await s.tenant();
    b = await s.tenant();
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    closeIdleHttpConnections();
  });

  function upload(key: string, files: FilePart[], fields: Record<string, string> = {}): Promise<HttpResult> {
    const boundary = `lore-${randomUUID()}`;
    const parts = [...Object.entries(fields).map(([name, data]) => ({ name, data })), ...files.map((f) => ({ name: f.name ?? 'files', filename: f.filename, type: f.type, data: f.data }))];
    return http(s.gateway.publicUrl, 'POST', UPLOAD, { headers: { ...as(key), 'content-type': `multipart/form-data; boundary=${boundary}` }, raw: multipart(boundary, parts) });
  }

  async function uploaded(key: string, files: FilePart[]): Promise<string[]> {
    const r = await upload(key, files);
    expect([r.status, r.json]).toEqual([200, { file_paths: expect.any(Array) }]);
    return r.json.file_paths as string[];
  }

  /** The tenant's uploaded connector files in the blob store (read as the tenant). */
  async function storedFiles(tenantId: string): Promise<string[]> {
    const r = await s.db.withTenant(tenantId, (sql) => sql.query<{ key: string }>(`SELECT key FROM runtime.blobs WHERE tenant_id = $1 AND key LIKE 'connector-files/%' ORDER BY key`, [tenantId]));
    return r.rows.map((x) => x.key);
  }

  async function connectorCount(tenantId: string): Promise<number> {
    const r = await s.db.withTenant(tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM core.connectors WHERE tenant_id = $1`, [tenantId]));
    return r.rows[0]!.n;
  }

  function createFileConnector(key: string, locations: string[]) {
    return s.call('POST', '/api/manage/admin/connector', as(key), {
      name: `Files ${uniqueSuffix()}`, source: 'file', input_type: 'load_state', connector_specific_config: { file_locations: locations }, access_type: 'public',
    });
  }

  /** A file connector over `locations`, paired with a `file` credential: the pair. */
  async function filePair(key: string, locations: string[]): Promise<{ connectorId: number; credentialId: number; pairId: number }> {
    const created = await createFileConnector(key, locations);
    expect(created.status).toBe(200);
    const credential = await s.call('POST', '/api/manage/credential', as(key), { name: `files ${uniqueSuffix()}`, source: 'file', credential_json: {} });
    expect(credential.status).toBe(201);
    const pair = await s.call('PUT', `/api/manage/connector/${created.json.id}/credential/${credential.json.id}`, as(key), {});
    expect(pair.status).toBe(200);
    return { connectorId: created.json.id as number, credentialId: credential.json.id as number, pairId: pair.json.id as number };
  }

  async function ended(key: string, pairId: number, attemptId: number): Promise<Json> {
    return eventually(`attempt ${attemptId} to end`, async () => {
      const r = await s.call('GET', `/api/manage/admin/cc-pair/${pairId}/index-attempts`, as(key));
      expect(r.status).toBe(200);
      const found = (r.json.index_attempts as Json[]).find((x) => x.id === attemptId);
      return found && !['not_started', 'in_progress'].includes(found.status as string) ? found : undefined;
    });
  }

  async function retrieve(key: string, query: string): Promise<Json[]> {
    const r = await s.call('POST', '/api/v1/memory/retrieve', { 'x-api-key': key }, { query, source_types: ['file'] });
    expect(r.status).toBe(200);
    return r.json.chunks as Json[];
  }

  it('uploads a PDF and a Markdown file, indexes them with a file connector, and finds the PDF\'s words in the memory', async () => {
    const pdf = pdfWithText(['Survey of the northern ridge', 'The cairn at the pass carries the brass marker quillomere.']);
    const notes = '# Field notes\n\nThe ford below the ridge is marked with a painted stake called tarvessin.\n';
    const paths = await uploaded(a.key, [
      { filename: 'ridge survey.pdf', type: 'application/pdf', data: pdf },
      { filename: 'notes/field.md', type: 'text/markdown', data: notes },
    ]);
    // The uploaded names, a client's directory left out.
    expect(paths.map((p) => PATH.exec(p)?.[1])).toEqual(['ridge survey.pdf', 'field.md']);
    expect(new Set(paths).size).toBe(2);
    expect(await storedFiles(a.tenantId)).toEqual(expect.arrayContaining(paths));
    expect(await storedFiles(b.tenantId)).toEqual([]);

    const { connectorId, pairId } = await filePair(a.key, paths);
    const run = await s.call('POST', '/api/manage/admin/connector/run-once', as(a.key), { connector_id: connectorId });
    expect(run.status).toBe(200);
    const attempt = await ended(a.key, pairId, run.json.attempts[0].id as number);
    expect(attempt).toMatchObject({ status: 'success', new_docs_indexed: 2, docs_skipped: 0, total_docs_indexed: 2, error_msg: null });

    const found = await eventually('the PDF\'s words in the memory', async () => {
      const chunks = await retrieve(a.key, 'brass marker quillomere');
      return chunks.find((c) => String(c.content).includes('quillomere'));
    });
    expect(found).toMatchObject({ source_type: 'file', title: 'ridge survey.pdf', metadata: expect.objectContaining({ extractor: 'pdf', content_type: 'application/pdf' }) });
    const markdown = await eventually('the Markdown file\'s words in the memory', async () =>
      (await retrieve(a.key, 'painted stake tarvessin')).find((c) => String(c.content).includes('tarvessin')),
    );
    expect(markdown).toMatchObject({ source_type: 'file', title: 'field.md' });
    // Another tenant finds nothing of them.
    expect(JSON.stringify(await retrieve(b.key, 'brass marker quillomere'))).not.toContain('quillomere');
  });

  it('refuses bad uploads with clear 4xx answers, keeping nothing', async () => {
    const before = await storedFiles(a.tenantId);
    const none = await upload(a.key, [], { note: 'no file here' });
    expect(none.status).toBe(422);
    expect(none.json).toEqual({ detail: [{ loc: ['body', 'files'], msg: 'at least one file part named `files` is required', type: 'value_error' }] });

    const tooLarge = await upload(a.key, [{ filename: 'big.txt', type: 'text/plain', data: Buffer.alloc(LIMITS.maxFileBytes + 1, 'a') }]);
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.json).toEqual({ detail: `a file may hold ${LIMITS.maxFileBytes} bytes at most` });
    const half = Buffer.alloc(60 * 1024, 'b');
    const together = await upload(a.key, [
      { filename: 'one.txt', type: 'text/plain', data: half },
      { filename: 'two.txt', type: 'text/plain', data: half },
    ]);
    expect(together.status).toBe(413);
    expect(together.json).toEqual({ detail: `the files of one upload may hold ${LIMITS.maxUploadBytes} bytes together` });
    const many = await upload(a.key, Array.from({ length: LIMITS.maxFilesPerUpload + 1 }, (_, i) => ({ filename: `f${i}.txt`, type: 'text/plain', data: `file ${i}` })));
    expect(many.status).toBe(422);
    expect(many.json).toEqual({ detail: [{ loc: ['body', 'files'], msg: `at most ${LIMITS.maxFilesPerUpload} files per upload`, type: 'value_error' }] });
    // Files after more other fields than an upload takes are not dropped in silence: the whole upload is refused.
    const boundary = `lore-${randomUUID()}`;
    const paddedParts = [
      { name: 'files', filename: 'first.txt', type: 'text/plain', data: 'first' },
      ...Array.from({ length: 30 }, (_, i) => ({ name: `junk${i}`, data: 'x' })),
      { name: 'files', filename: 'last.txt', type: 'text/plain', data: 'last' },
    ];
    const padded = await http(s.gateway.publicUrl, 'POST', UPLOAD, { headers: { ...as(a.key), 'content-type': `multipart/form-data; boundary=${boundary}` }, raw: multipart(boundary, paddedParts) });
    expect(padded.status).toBe(422);
    expect(padded.json).toEqual({ detail: [{ loc: ['body', 'files'], msg: `an upload holds at most ${LIMITS.maxFilesPerUpload} files and 20 other fields`, type: 'value_error' }] });

    // A type no file connector reads is refused at once, naming the file, with the whole upload.
    const zip = await upload(a.key, [
      { filename: 'fine.md', type: 'text/markdown', data: '# Fine' },
      { filename: 'bundle.zip', type: 'application/zip', data: Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x08, 0x00]) },
    ]);
    expect(zip.status).toBe(415);
    expect(zip.json).toEqual({ detail: '"bundle.zip": this type of file cannot be read (application/zip); a file connector reads text, Markdown, HTML, CSV, JSON, PDF and DOCX files' });
    const png = await upload(a.key, [{ filename: 'scan.png', type: 'image/png', data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]) }]);
    expect(png.status).toBe(415);
    expect(png.json.detail).toBe('"scan.png": this type of file cannot be read (image/png (no OCR engine)); a file connector reads text, Markdown, HTML, CSV, JSON, PDF and DOCX files');
    const empty = await upload(a.key, [{ filename: 'empty.txt', type: 'text/plain', data: '' }]);
    expect(empty.status).toBe(422);
    expect(empty.json).toEqual({ detail: [{ loc: ['body', 'files'], msg: '"empty.txt" is empty', type: 'value_error' }] });

    const json = await s.call('POST', UPLOAD, as(a.key), { files: [] });
    expect(json.status).toBe(415);
    expect(json.json).toEqual({ detail: expect.any(String) });
    const malformed = await http(s.gateway.publicUrl, 'POST', UPLOAD, {
      headers: { ...as(a.key), 'content-type': 'multipart/form-data; boundary=xyz' },
      raw: '--xyz\r\ncontent-disposition: form-data; name="files"; filename="a.txt"\r\n\r\nunterminated',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.json).toEqual({ detail: expect.any(String) });

    // Administrators only: a member gets 403 before anything is read, and so does a read-only key.
    const member = await s.user(a.tenantId, 'member');
    const byMember = await upload(member.token, [{ filename: 'x.md', type: 'text/markdown', data: '# x' }]);
    expect([byMember.status, byMember.json]).toEqual([403, { detail: 'administrators only' }]);
    const readOnly = await s.key(a.tenantId, { scopes: { access: 'read' } });
    expect((await upload(readOnly, [{ filename: 'x.md', type: 'text/markdown', data: '# x' }])).status).toBe(403);

    expect(await storedFiles(a.tenantId)).toEqual(before);
  });

  it('creates a file connector only over files uploaded to its own tenant: any other path is 400 naming it, nothing written', async () => {
    const [mine] = await uploaded(a.key, [{ filename: 'mine.md', type: 'text/markdown', data: '# Mine\n\nA note of tenant A.' }]);
    const [theirs] = await uploaded(b.key, [{ filename: 'theirs.md', type: 'text/markdown', data: '# Theirs\n\nA note of tenant B.' }]);
    const unknown = `connector-files/${randomUUID()}/never-uploaded.md`;
    const connectors = await connectorCount(a.tenantId);
    const refusal = (missing: string[]) => ({
      detail: `file_locations must be paths of files uploaded with POST /api/manage/admin/connector/file/upload; not uploaded: ${missing.map((m) => JSON.stringify(m)).join(', ')}`,
    });

    const unknownPath = await createFileConnector(a.key, [mine!, unknown]);
    expect([unknownPath.status, unknownPath.json]).toEqual([400, refusal([unknown])]);
    // The blob store is per tenant: B's path names no file of A.
    const otherTenant = await createFileConnector(a.key, [theirs!]);
    expect([otherTenant.status, otherTenant.json]).toEqual([400, refusal([theirs!])]);
    // A key outside the uploads (a chat project file's, say) is no connector file either.
    const projectFile = `${a.tenantId}/project-files/${randomUUID()}`;
    const elsewhere = await createFileConnector(a.key, [projectFile, 'uploads/report.pdf']);
    expect([elsewhere.status, elsewhere.json]).toEqual([400, refusal([projectFile, 'uploads/report.pdf'])]);
    expect(await connectorCount(a.tenantId)).toBe(connectors);

    // B's own file is B's to use; A's is A's.
    expect((await createFileConnector(b.key, [theirs!])).status).toBe(200);
    expect((await createFileConnector(a.key, [mine!])).status).toBe(200);
  });

  it('keeps a file uploaded in one workspace from connectors made by credentials bound to another', async () => {
    const [inFirst] = await uploaded(a.key, [{ filename: 'first.md', type: 'text/markdown', data: '# First\n\nThe first workspace keeps the amber ledger.' }]);
    expect(inFirst!.startsWith(`connector-files/${a.workspaceId}/${a.memoryId}/`)).toBe(true);
    const created = await s.call('POST', '/api/v1/workspaces', { 'x-api-key': a.key }, { name: `Second ${uniqueSuffix()}` });
    expect(created.status).toBe(201);
    const second = created.json as { workspace_id: string; primary_memory_id: string };
    const inSecond = await s.key(a.tenantId, { workspace_id: second.workspace_id });
    const refused = await createFileConnector(inSecond, [inFirst!]);
    expect([refused.status, refused.json]).toEqual([400, { detail: `file_locations must be paths of files uploaded with POST /api/manage/admin/connector/file/upload; not uploaded: ${JSON.stringify(inFirst)}` }]);
    // Its own uploads land in its workspace and are its to use; a key bound to the first workspace, or scoped to its
    // memory, may use the first's.
    const [own] = await uploaded(inSecond, [{ filename: 'second.md', type: 'text/markdown', data: '# Second\n\nThe second workspace keeps the jade ledger.' }]);
    expect(own!.startsWith(`connector-files/${second.workspace_id}/${second.primary_memory_id}/`)).toBe(true);
    expect((await createFileConnector(inSecond, [own!])).status).toBe(200);
    expect((await createFileConnector(await s.key(a.tenantId, { workspace_id: a.workspaceId }), [inFirst!])).status).toBe(200);
    expect((await createFileConnector(await s.key(a.tenantId, { scopes: { memories: [a.memoryId] } }), [inFirst!])).status).toBe(200);
    // A tenant-wide key may use either, and a file kept under the older key shape (no place) stays the tenant-wide
    // credentials' only.
    expect((await createFileConnector(a.key, [inFirst!, own!])).status).toBe(200);
    const legacy = `connector-files/${randomUUID()}/legacy.md`;
    await new PostgresBlobStore(s.db).put(a.tenantId, legacy, Buffer.from('# Legacy\n\nAn older upload.'), 'text/markdown');
    expect((await createFileConnector(a.key, [legacy])).status).toBe(200);
    expect((await createFileConnector(inSecond, [legacy])).status).toBe(400);
  });

  it('deletes a deleted connector\'s uploaded files that no other connector names, and keeps those another names', async () => {
    const [only, shared] = await uploaded(a.key, [
      { filename: 'only.md', type: 'text/markdown', data: '# Only\n\nNamed by one connector.' },
      { filename: 'shared.md', type: 'text/markdown', data: '# Shared\n\nNamed by two connectors.' },
    ]);
    const first = await filePair(a.key, [only!, shared!]);
    const second = await filePair(a.key, [shared!]);
    const remove = async (pair: { connectorId: number; credentialId: number; pairId: number }) => {
      const r = await s.call('POST', '/api/manage/admin/deletion-attempt', as(a.key), { connector_id: pair.connectorId, credential_id: pair.credentialId });
      expect(r.status).toBe(200);
      await eventually(`pair ${pair.pairId} to be deleted`, async () => (await s.call('GET', `/api/manage/admin/cc-pair/${pair.pairId}`, as(a.key))).status === 404);
    };

    await remove(first);
    const left = await storedFiles(a.tenantId);
    expect(left).not.toContain(only);
    expect(left).toContain(shared);
    await remove(second);
    expect(await storedFiles(a.tenantId)).not.toContain(shared);
  });
});
