import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startProcess, stopProcess, until, type Started } from './processes';

jest.setTimeout(300_000);

const ROOT = join(__dirname, '..', '..');
const DOCS = 20;
/** Rows of the graph upload: enough for a job of several seconds. */
const ROWS = 30_000;

interface Booted extends Started {
  url: string;
}

/** `npm start`'s entry in a process group of its own (so a kill -9 takes the whole of it), ready on a free port. */
async function boot(dataDir: string): Promise<Booted> {
  const p = startProcess(process.execPath, [join(ROOT, 'scripts', 'start-embedded.mjs')], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', LORE_OPS_PORT: '0', LORE_ADMIN_PORT: '0', LORE_DATA_DIR: dataDir, LORE_LOG_LEVEL: 'warn', LORE_OCR: 'false', LORE_EMBEDDER: 'hashed' },
  });
  const url = await until('the ready line', async () => /Lore is ready on (http:\/\/\S+)/.exec(p.output())?.[1], 90_000, p);
  return { ...p, url };
}

/** Every document of the dev tenant's memory, page by page. */
async function statuses(url: string, key: string): Promise<Array<{ doc_id: string; status: string; title: string }>> {
  const all: Array<{ doc_id: string; status: string; title: string }> = [];
  let cursor: string | null = null;
  do {
    const r: Response = await fetch(`${url}/api/v1/memory/documents?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { headers: { 'x-api-key': key } });
    const page = (await r.json()) as { documents: Array<{ doc_id: string; status: string; title: string }>; next_cursor: string | null };
    all.push(...page.documents);
    cursor = page.next_cursor;
  } while (cursor);
  return all;
}

/** kill -9 of the whole process group, as a crash or an OOM kill would end it. */
async function crash(b: Booted): Promise<void> {
  const gone = new Promise((r) => b.child.once('exit', r));
  process.kill(-b.child.pid!, 'SIGKILL');
  await gone;
}

/**
 * Embedded mode's bus lives in its process: a kill -9 loses what it held. What was accepted is in the database (the
 * outbox keeps every message it published); the next start publishes again what the ended process had not handled
 * (docs/runtime.md, "A bus that ends with the process"), so every accepted document is indexed after all.
 */
describe('embedded mode after a kill -9', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lore-embedded-crash-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('indexes every document it accepted before the kill, once, and runs the graph job the bus lost', async () => {
    const first = await boot(dataDir);
    const key = (JSON.parse(readFileSync(join(dataDir, 'dev-credentials.json'), 'utf8')) as { api_key: string }).api_key;
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    const accepted: string[] = [];
    const ingest = async (url: string, title: string, content: string) => {
      const r = await fetch(`${url}/api/v1/memory/ingest`, { method: 'POST', headers, body: JSON.stringify({ content, content_type: 'text', title }) });
      expect(r.status).toBe(200);
      accepted.push(((await r.json()) as { doc_id: string }).doc_id);
    };
    let graphId = '';
    try {
      for (let n = 0; n < DOCS; n++) await ingest(first.url, `doc ${n}`, `Document ${n} before the crash: the Heron review covers the budget and the launch.`);
      // A knowledge-graph job of several seconds (one transaction, which holds the embedded database while it
      // runs), killed while it runs: its message was in the bus, and the upload's answer waits for the database, so
      // the kill comes a few seconds after the upload was sent.
      const created = await fetch(`${first.url}/memory/departments/create`, { method: 'POST', headers, body: JSON.stringify({ name: 'Crash test', description: 'filled by an upload' }) });
      graphId = ((await created.json()) as { graph_id: string }).graph_id;
      const rows = Array.from({ length: ROWS }, (_, i) => `Person ${i},Engineer,Company ${i % 50},https://company${i % 50}.example,City ${i % 7}`);
      const form = new FormData();
      form.append('file', new Blob([['Name,Title,Company,Website,Location', ...rows].join('\n')]), 'people.csv');
      form.append('list_id', graphId);
      void fetch(`${first.url}/memory/upload`, { method: 'POST', headers: { 'x-api-key': key }, body: form }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 3_000));
    } finally {
      await crash(first);
    }
    expect(accepted).toHaveLength(DOCS);
    // The internal sockets' folder: the kill left it behind; the next start there removes it.
    const killedSockets = readFileSync(join(dataDir, 'sockets.path'), 'utf8').trim();
    expect(existsSync(join(killedSockets, 'graph.sock'))).toBe(true);
    const restarted = Date.now();
    const second = await boot(dataDir);
    const secondSockets = readFileSync(join(dataDir, 'sockets.path'), 'utf8').trim();
    expect(existsSync(killedSockets)).toBe(false);
    expect(existsSync(join(secondSockets, 'graph.sock'))).toBe(true);
    try {
      const deadline = Date.now() + 120_000;
      let docs = await statuses(second.url, key);
      while (docs.some((d) => d.status !== 'indexed') && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 500));
        docs = await statuses(second.url, key);
      }
      const byId = new Map(docs.map((d) => [d.doc_id, d.status]));
      const counts: Record<string, number> = {};
      for (const id of accepted) counts[byId.get(id) ?? 'missing'] = (counts[byId.get(id) ?? 'missing'] ?? 0) + 1;
      expect(counts).toEqual({ indexed: DOCS });
      // Once each: no document twice.
      expect(new Set(docs.map((d) => d.title)).size).toBe(docs.length);
      // The job the bus lost ran after the restart, and the graph is whole.
      let graph = { status: '', node_count: 0, updated_at: '' };
      while (!['ready', 'error'].includes(graph.status) && Date.now() < deadline) {
        graph = (await (await fetch(`${second.url}/memory/departments/${graphId}`, { headers })).json()) as typeof graph;
        if (!['ready', 'error'].includes(graph.status)) await new Promise((r) => setTimeout(r, 250));
      }
      expect(graph).toMatchObject({ status: 'ready' });
      expect(graph.node_count).toBeGreaterThanOrEqual(ROWS);
      // It was filled after the restart: the kill found the job unfinished (a test that proves something).
      expect(Date.parse(graph.updated_at)).toBeGreaterThan(restarted);
    } finally {
      await stopProcess(second);
    }
  });
});
