import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LoopbackWeb } from '../support/loopback-web';
import { duplicateTopLevelKeys, freePort } from './processes';
import { companyKey, generateAgentsWorld, matchingCompanies, serveAgentsWorld, worldCsv } from '../support/agents-world';

const ROOT = join(__dirname, '..', '..');

interface Booted {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/**
 * Starts `npm start`'s entry exactly as a newcomer would, on free ports, and waits for the ready line. The admin API
 * gets a free port too: a Lore the developer runs beside the tests holds the default one.
 */
async function boot(dataDir: string, env: Record<string, string> = {}): Promise<Booted> {
  const adminPort = String(await freePort());
  const child = spawn(process.execPath, [join(ROOT, 'scripts', 'start-embedded.mjs')], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', LORE_OPS_PORT: '0', LORE_ADMIN_PORT: adminPort, LORE_DATA_DIR: dataDir, LORE_LOG_LEVEL: 'warn', LORE_OCR: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, as a terminal gives a command, so a test can press Ctrl-C (`stop(b, 'ctrl-c')`).
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`embedded mode not ready within 60 s:\n${out}`)), 60_000);
    const check = () => {
      const m = /Lore is ready on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]!, output: () => out });
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`embedded mode exited with ${code}:\n${out}`));
    });
  });
}

/**
 * SIGTERM to the launcher (which forwards it), or what Ctrl-C in a terminal does: SIGINT to the whole process group,
 * so the embedded process gets it from the terminal and again from the launcher.
 */
async function stop(b: Booted, how: 'sigterm' | 'ctrl-c' = 'sigterm'): Promise<void> {
  if (b.child.exitCode !== null) return;
  const exited = new Promise((r) => b.child.once('exit', r));
  if (how === 'ctrl-c') process.kill(-b.child.pid!, 'SIGINT');
  else b.child.kill('SIGTERM');
  await exited;
}

describe('embedded mode', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lore-embedded-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('boots from an empty data directory, writes the dev credentials and serves ping with that key; a second boot reuses it', async () => {
    const first = await boot(dataDir);
    let key: string;
    let tenant: string;
    let encryptionKeys: string;
    let firstCreds: Record<string, string>;
    try {
      // Generated secrets, the encryption key ring for stored webhook secrets among them, readable only by the owner.
      const secretsFile = join(dataDir, 'secrets.json');
      const secrets = JSON.parse(readFileSync(secretsFile, 'utf8')) as Record<string, string>;
      expect(Object.keys(secrets).sort()).toEqual(['admin_token', 'encryption_keys', 'identity_secret', 'session_secret']);
      expect(secrets.encryption_keys).toMatch(/^k1:[A-Za-z0-9+/]{43}=$/);
      expect(statSync(secretsFile).mode & 0o077).toBe(0);
      encryptionKeys = secrets.encryption_keys!;

      const file = join(dataDir, 'dev-credentials.json');
      const creds = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
      expect(Object.keys(creds).sort()).toEqual(['admin_email', 'admin_password', 'admin_token', 'api_key', 'tenant_id']);
      expect(creds.api_key).toMatch(/^ck_test_/);
      expect(creds.admin_token).toBe(secrets.admin_token);
      expect(statSync(file).mode & 0o077).toBe(0);
      // The first start shows every new secret once, at the terminal.
      for (const secret of [creds.api_key!, creds.admin_password!, creds.admin_token!]) expect(first.output()).toContain(secret);
      firstCreds = creds;
      key = creds.api_key!;
      tenant = creds.tenant_id!;

      const ping = await fetch(`${first.url}/api/v1/pages/ping`, { headers: { 'x-api-key': key } });
      expect(ping.status).toBe(200);
      const body = (await ping.json()) as Record<string, unknown>;
      expect(body).toMatchObject({ status: 'ok', tenant_id: tenant });
      expect(typeof body.service).toBe('string');
      expect(typeof body.role).toBe('string');

      const anonymous = await fetch(`${first.url}/api/v1/pages/ping`);
      expect(anonymous.status).toBe(401);
      // The key with its last character changed (to another one: one key in 62 ends in "x" already).
      const wrongKey = `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}`;
      expect(wrongKey).not.toBe(key);
      const wrong = await fetch(`${first.url}/api/v1/pages/ping`, { headers: { 'x-api-key': wrongKey } });
      expect(wrong.status).toBe(401);

      // A webhook subscription: its signing secret is sealed with that key before it is stored.
      const webhook = await fetch(`${first.url}/api/v1/webhooks`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'https://hooks.example.com/lore', events: ['memory.ingest.completed'] }),
      });
      expect(webhook.status).toBe(201);
      expect(((await webhook.json()) as { secret: string }).secret).toMatch(/^whsec_/);
    } finally {
      await stop(first);
    }

    const second = await boot(dataDir);
    const socketsFolder = readFileSync(join(dataDir, 'sockets.path'), 'utf8').trim();
    expect(existsSync(socketsFolder)).toBe(true);
    try {
      const creds = JSON.parse(readFileSync(join(dataDir, 'dev-credentials.json'), 'utf8')) as Record<string, string>;
      expect(creds).toEqual(firstCreds!);
      // A restart reveals nothing: the secrets stay in the file.
      for (const secret of [creds.api_key!, creds.admin_password!, creds.admin_token!]) expect(second.output()).not.toContain(secret);
      // The same key ring, so what the first boot sealed still opens.
      expect((JSON.parse(readFileSync(join(dataDir, 'secrets.json'), 'utf8')) as Record<string, string>).encryption_keys).toBe(encryptionKeys);
      const ping = await fetch(`${second.url}/api/v1/pages/ping`, { headers: { 'x-api-key': key } });
      expect(ping.status).toBe(200);
      expect(((await ping.json()) as { tenant_id: string }).tenant_id).toBe(tenant);
      // Another start on the running one's data directory is refused before it opens anything (a second opener
      // corrupts the embedded database), and the running one goes on.
      const refused = await boot(dataDir).then(() => 'started', (e: Error) => e.message);
      expect(refused).toMatch(/exited with 1[\s\S]*is in use by another Lore process \(pid \d+\)/);
      expect((await fetch(`${second.url}/api/v1/pages/ping`, { headers: { 'x-api-key': key } })).status).toBe(200);
    } finally {
      await stop(second, 'ctrl-c');
    }
    // A clean stop, Ctrl-C's included, gives the directory back, its sockets folder removed before (shutdown runs in
    // reverse order).
    expect(existsSync(join(dataDir, 'lore.pid'))).toBe(false);
    expect(existsSync(socketsFolder)).toBe(false);
  }, 150_000);

  it('ingests and answers a cited search through the gateway, even when its ops port is taken', async () => {
    // Something else already listens on the ops port: Lore still starts, says so, and serves its public port.
    const squatter = createServer((_req, res) => res.end('not lore'));
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const taken = (squatter.address() as AddressInfo).port;
    // At info level, so that every service writes a few lines.
    const b = await boot(dataDir, { LORE_OPS_PORT: String(taken), LORE_LOG_LEVEL: 'info' });
    try {
      // The warning is logged before the banner, but on stderr: the two pipes reach this process in either order.
      const deadline = Date.now() + 15_000;
      while (!b.output().includes('ops port in use') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(b.output()).toContain('ops port in use');
      // Each line names its service once (one process hosts them all), whatever part of it wrote the line.
      // (stdout and stderr reach this process as separate pipes: only whole lines are read.)
      const parsed = (l: string) => {
        try {
          return JSON.parse(l) as { service?: string };
        } catch {
          return null;
        }
      };
      const lines = b.output().split('\n').filter((l) => l.startsWith('{') && parsed(l) !== null);
      const services = new Set(lines.map((l) => parsed(l)!.service));
      expect([...services].sort()).toEqual(expect.arrayContaining(['agents', 'core', 'gateway', 'graph', 'lore-embedded']));
      expect(lines.filter((l) => duplicateTopLevelKeys(l).length > 0)).toEqual([]);
      const { api_key: key } = JSON.parse(readFileSync(join(dataDir, 'dev-credentials.json'), 'utf8')) as { api_key: string };
      const headers = { 'x-api-key': key, 'content-type': 'application/json' };
      const ingest = await fetch(`${b.url}/api/v1/memory/ingest`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ content: 'Lighthouse keepers on Skerry Point log the fog horn every evening at nine.', content_type: 'text', routing: { mode: 'auto' } }),
      });
      expect(ingest.status).toBe(200);
      const doc = (await ingest.json()) as { doc_id: string };
      let answer: { answer: string; citations: Array<{ index: number; document_id: string }> } | undefined;
      for (let i = 0; i < 50; i++) {
        const res = await fetch(`${b.url}/api/v1/memory/search`, { method: 'POST', headers, body: JSON.stringify({ query: 'When is the fog horn logged on Skerry Point?' }) });
        expect(res.status).toBe(200);
        answer = (await res.json()) as typeof answer;
        if (answer!.citations.some((c) => c.document_id === doc.doc_id)) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(answer!.citations.map((c) => c.document_id)).toContain(doc.doc_id);
      expect(answer!.answer).toMatch(/\[\d+\]/);
    } finally {
      await stop(b);
      squatter.close();
    }
  }, 120_000);

  it('is not ready while its data directory cannot be written, and ready again when it can', async () => {
    const own = mkdtempSync(join(tmpdir(), 'lore-embedded-ready-'));
    const opsPort = await freePort();
    const b = await boot(own, { LORE_OPS_PORT: String(opsPort) });
    const readyz = async () => {
      const r = await fetch(`http://127.0.0.1:${opsPort}/readyz`);
      return { status: r.status, body: (await r.json()) as { status: string; checks: Record<string, { ok: boolean; error?: string }> } };
    };
    const until = async (status: number) => {
      const deadline = Date.now() + 20_000;
      let last = await readyz();
      while (last.status !== status && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        last = await readyz();
      }
      return last;
    };
    try {
      const ready = await until(200);
      expect([ready.status, ready.body.checks['data directory']]).toEqual([200, { ok: true }]);
      // The directory goes away under the running process (an unmounted volume, a removed folder).
      renameSync(own, `${own}.moved`);
      const gone = await until(503);
      expect([gone.status, gone.body.status, gone.body.checks['data directory']]).toEqual([503, 'not_ready', { ok: false, error: 'the data directory is not writable (ENOENT)' }]);
      expect(gone.body.checks.database).toMatchObject({ ok: true });
      renameSync(`${own}.moved`, own);
      expect((await until(200)).status).toBe(200);
    } finally {
      if (existsSync(`${own}.moved`)) renameSync(`${own}.moved`, own);
      await stop(b);
      rmSync(own, { recursive: true, force: true });
    }
  }, 120_000);

  it('serves core: a chat session with the default persona, created, listed and answered from the memory with the dev key', async () => {
    const b = await boot(dataDir);
    try {
      const { api_key: key } = JSON.parse(readFileSync(join(dataDir, 'dev-credentials.json'), 'utf8')) as { api_key: string };
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const created = await fetch(`${b.url}/api/chat/create-chat-session`, { method: 'POST', headers, body: JSON.stringify({ persona_id: 0 }) });
      expect(created.status).toBe(200);
      const { chat_session_id: id } = (await created.json()) as { chat_session_id: string };
      const listed = (await (await fetch(`${b.url}/api/chat/get-user-chat-sessions`, { headers })).json()) as { sessions: Array<{ id: string; persona_id: number }> };
      expect(listed.sessions).toContainEqual(expect.objectContaining({ id, persona_id: 0 }));
      // Connectors may not read this machine unless LORE_CONNECTORS_ALLOW_LOOPBACK says so: 400 with the reason.
      const local = await fetch(`${b.url}/api/manage/admin/connector`, {
        method: 'POST', headers,
        body: JSON.stringify({ name: 'local', source: 'web', input_type: 'load_state', connector_specific_config: { base_url: 'http://127.0.0.1:9/', web_connector_type: 'single' }, access_type: 'public' }),
      });
      expect(local.status).toBe(400);
      expect(((await local.json()) as { detail: string }).detail).toContain('base_url cannot be read by a connector');
      const unknown = await fetch(`${b.url}/api/chat/create-chat-session`, { method: 'POST', headers, body: JSON.stringify({ persona_id: 4242 }) });
      expect(unknown.status).toBe(400);
      expect(await unknown.json()).toEqual({ detail: expect.any(String) });
      // Chat searches the memory the earlier test filled (same data directory) and cites it.
      const answer = await fetch(`${b.url}/api/chat/send-chat-message`, {
        method: 'POST', headers, body: JSON.stringify({ chat_session_id: id, message: 'When is the fog horn logged on Skerry Point?', stream: false }),
      });
      expect(answer.status).toBe(200);
      const complete = (await answer.json()) as { answer: string; citation_info: Array<{ document_id: string }>; top_documents: Array<{ document_id: string }>; error_msg: string | null };
      expect(complete.error_msg).toBeNull();
      expect(complete.top_documents.length).toBeGreaterThan(0);
      expect(complete.citation_info.map((c) => c.document_id)).toContain(complete.top_documents[0]!.document_id);
      expect(complete.answer).toMatch(/nine/);
      const doc = (await (await fetch(`${b.url}/api/openapi.json`)).json()) as { info: { version: string } };
      expect(doc.info.version).toBe('0.0.0-dev');
    } finally {
      await stop(b);
    }
  }, 120_000);

  it('indexes a web connector into the memory: run once, the attempt ends, retrieval and chat find the page with its link', async () => {
    const web = await new LoopbackWeb({ seed: 3 }).start();
    // Loopback reads are for local testing, and off unless asked for.
    const b = await boot(dataDir, { LORE_CONNECTORS_ALLOW_LOOPBACK: 'true' });
    try {
      const { api_key: key } = JSON.parse(readFileSync(join(dataDir, 'dev-credentials.json'), 'utf8')) as { api_key: string };
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const post = async (path: string, body: unknown, method = 'POST') => {
        // The memory API takes its key as x-api-key; core takes a bearer credential.
        const r = await fetch(`${b.url}${path}`, { method, headers: path.startsWith('/api/v1/memory') ? { 'x-api-key': key, 'content-type': 'application/json' } : headers, body: JSON.stringify(body) });
        return { status: r.status, json: (await r.json()) as Record<string, any> };
      };
      const hub = `${web.url}/`;
      const connector = await post('/api/manage/admin/connector', {
        name: 'Loopback hub', source: 'web', input_type: 'load_state', connector_specific_config: { base_url: hub, web_connector_type: 'single' },
        refresh_freq: 3600, prune_freq: null, indexing_start: null, access_type: 'public', groups: [],
      });
      expect(connector.status).toBe(200);
      const credential = await post('/api/manage/credential', { name: 'web', source: 'web', credential_json: {} });
      expect(credential.status).toBe(201);
      const pair = await post(`/api/manage/connector/${connector.json.id}/credential/${credential.json.id}`, {}, 'PUT');
      expect(pair.status).toBe(200);
      const run = await post('/api/manage/admin/connector/run-once', { connector_id: connector.json.id });
      expect(run.status).toBe(200);
      let info: Record<string, any> = {};
      for (let i = 0; i < 100 && info.last_index_attempt_status !== 'success'; i++) {
        await new Promise((r) => setTimeout(r, 200));
        info = (await (await fetch(`${b.url}/api/manage/admin/cc-pair/${pair.json.id}`, { headers })).json()) as Record<string, any>;
        expect(info.last_index_attempt_status ?? 'success').not.toBe('failed');
      }
      expect(info).toMatchObject({ last_index_attempt_status: 'success', num_docs_indexed: 1 });
      let chunks: Array<Record<string, any>> = [];
      for (let i = 0; i < 100 && !chunks.some((c) => c.link === hub); i++) {
        await new Promise((r) => setTimeout(r, 200));
        const found = await post('/api/v1/memory/retrieve', { query: 'The loopback web' });
        expect(found.status).toBe(200);
        chunks = found.json.chunks as Array<Record<string, any>>;
      }
      expect(chunks).toContainEqual(expect.objectContaining({ link: hub, source_type: 'web', title: 'The loopback web' }));
    } finally {
      await stop(b);
      await web.close();
    }
  }, 120_000);
  it('builds a list from an imported CSV and the web: a streamed workflow ends with exactly the matching companies', async () => {
    // The agents test world: companies with their own sites on this machine and a SearXNG-format search over them.
    const served = await serveAgentsWorld(generateAgentsWorld(5, { companies: 80 }));
    const b = await boot(dataDir, { LORE_AGENTS_ALLOW_LOOPBACK: 'true', LORE_AGENTS_SEARXNG_URL: served.search.url });
    try {
      const { api_key: key } = JSON.parse(readFileSync(join(dataDir, 'dev-credentials.json'), 'utf8')) as { api_key: string };
      const auth = { authorization: `Bearer ${key}` };
      const sse = (text: string) => text.split('\n\n').map((f) => /^data: (.*)$/m.exec(f)?.[1]).filter((d): d is string => d !== undefined).map((d) => JSON.parse(d) as Record<string, any>);
      // Import every other company of the world as a CSV: the analysis streams, then a review imports it.
      const half = served.world.companies.filter((_, i) => i % 2 === 0);
      const csv = worldCsv({ ...served.world, companies: half }, 'company', { port: served.web.port });
      const form = new FormData();
      form.append('file', new Blob([csv], { type: 'text/csv' }), 'companies.csv');
      const upload = await fetch(`${b.url}/api/lists/csv/upload`, { method: 'POST', headers: auth, body: form });
      expect(upload.status).toBe(200);
      const analysis = sse(await upload.text());
      expect(analysis.at(-1)).toMatchObject({ status: 'ready_for_review' });
      const thread = analysis[0]!.thread_id as string;
      const review = await fetch(`${b.url}/api/lists/csv/review/${thread}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ listName: 'Imported companies' }) });
      expect(review.status).toBe(200);
      let imported: Record<string, any> = {};
      for (let i = 0; i < 300 && imported.status !== 'completed'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        imported = (await (await fetch(`${b.url}/api/lists/csv/status/${thread}`, { headers: auth })).json()) as Record<string, any>;
        expect(imported.status).not.toBe('error');
      }
      expect(imported).toMatchObject({ status: 'completed', imported_rows: 40 });
      // A list prompt, streamed to its end: the directory gives the imported half, the web search the other half.
      const started = await fetch(`${b.url}/api/workflow/start`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'Find fintech companies in Berlin', total_target: 25 }) });
      expect(started.status).toBe(200);
      expect(started.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const frames = sse(await started.text());
      expect(frames.at(-1)).toMatchObject({ status: 'completed' });
      const workflow = frames[0]!.thread_id as string;
      const status = (await (await fetch(`${b.url}/api/workflow/status/${workflow}`, { headers: auth })).json()) as Record<string, any>;
      const truth = matchingCompanies(served.world, { industry: 'Fintech', city: 'Berlin' }).map(companyKey);
      // Both sources are needed: some matching companies were imported, the others only the web search finds.
      const importedKeys = new Set(half.map(companyKey));
      expect(truth.some((k) => importedKeys.has(k))).toBe(true);
      expect(truth.some((k) => !importedKeys.has(k))).toBe(true);
      expect(new Set((status.all_companies as Array<{ entity_key: string }>).map((r) => r.entity_key))).toEqual(new Set(truth));
      expect(status.table_structure.sources).toEqual(expect.arrayContaining(['directory', 'web']));
    } finally {
      await stop(b);
      await served.close();
    }
  }, 180_000);
});
