/**
 * Chat project files in embedded mode (`npm start`'s single process on PGlite): core has a blob store there too, so
 * a project's files upload through the public port, are extracted in the background, and a chat answer in the
 * project cites them. See "Project files" in docs/core.md.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pdfWithText } from '@lore/extract/scan-pdf';
import { freePort, multipart, startProcess, stopProcess, until, type Started } from './processes';

const ROOT = join(__dirname, '..', '..');

describe('embedded mode: chat project files', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lore-e2e-project-files-'));
  let lore: Started;
  let url: string;
  let key: string;

  beforeAll(async () => {
    const [port, opsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
    url = `http://127.0.0.1:${port}`;
    lore = startProcess(process.execPath, [join(ROOT, 'scripts', 'start-embedded.mjs')], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), LORE_OPS_PORT: String(opsPort), LORE_ADMIN_PORT: String(adminPort), LORE_DATA_DIR: dataDir, LORE_LOG_LEVEL: 'warn', LORE_OCR: 'false' },
    });
    const credentials = join(dataDir, 'dev-credentials.json');
    key = await until('dev-credentials.json', async () => (existsSync(credentials) ? (JSON.parse(readFileSync(credentials, 'utf8')) as { api_key?: string }).api_key : undefined), 120_000, lore);
    await until('the public port to answer', async () => ((await fetch(`${url}/api/chat/projects`, { headers: { authorization: `Bearer ${key}` } })).status === 200 ? true : undefined), 60_000, lore);
  }, 180_000);
  afterAll(async () => {
    if (lore) await stopProcess(lore);
    rmSync(dataDir, { recursive: true, force: true });
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: r.status, json: (await r.json()) as Record<string, any> };
  };

  it('uploads a PDF and a text file to a project, polls them to completed, and answers from them with citations', async () => {
    const project = await call('POST', '/api/chat/projects', { name: 'Lighthouse' });
    expect(project.status).toBe(201);
    const pid = project.json.id as number;
    const boundary = 'lore-embedded-files';
    const body = multipart(boundary, [
      { name: 'files', filename: 'keepers.pdf', type: 'application/pdf', data: pdfWithText(['Keepers log', 'The Skerry Point keepers light the lamp at dusk.']) },
      { name: 'files', filename: 'notes.txt', type: 'text/plain', data: 'The fog horn sounds every thirty seconds in fog.' },
    ]);
    const up = await fetch(`${url}/api/chat/projects/${pid}/files`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
    expect(up.status).toBe(202);
    const accepted = ((await up.json()) as { files: Array<{ id: string; status: string }> }).files;
    expect(accepted.map((f) => f.status)).toEqual(['processing', 'processing']);

    const files = await until(
      'the project files to settle',
      async () => {
        const r = await call('GET', `/api/chat/projects/${pid}/files?file_ids=${accepted.map((f) => f.id).join(',')}`);
        const list = r.json.files as Array<{ status: string; token_count: number | null }>;
        return list.every((f) => f.status !== 'processing') ? list : undefined;
      },
      60_000,
      lore,
    );
    expect(files.map((f) => f.status)).toEqual(['completed', 'completed']);

    const session = await call('POST', '/api/chat/create-chat-session', { persona_id: 0, project_id: pid });
    expect(session.status).toBe(200);
    const answer = await call('POST', '/api/chat/send-chat-message', { message: 'When do the Skerry Point keepers light the lamp?', chat_session_id: session.json.chat_session_id, stream: false });
    expect(answer.status).toBe(200);
    expect(answer.json.answer_citationless).toMatch(/at dusk/);
    expect(answer.json.citation_info).toContainEqual({ citation_num: expect.any(Number), document_id: accepted[0]!.id });
    expect(answer.json.top_documents[0]).toMatchObject({ source_type: 'file', semantic_identifier: 'keepers.pdf' });
  }, 120_000);
});
