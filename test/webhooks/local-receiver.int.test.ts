import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startProcess, stopProcess, until, type Started } from '../e2e/processes';

/**
 * The README's "Receive webhooks on your machine", run as written: `LORE_WEBHOOKS_ALLOW_LOOPBACK=true npm start`,
 * the subscription and ingest bodies of its curl commands, and its receiver script in a node process of its own.
 * The only change is the ports (free ones instead of 8080 and 4000). Then the same data directory without the
 * setting: a loopback subscription is refused at creation, and the stored one gets no delivery. And production
 * refuses the setting at start.
 */
jest.setTimeout(240_000);

const ROOT = join(__dirname, '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The README section, from its heading to the next heading of the same level (or the end). */
function section(): string {
  const start = README.indexOf('## Receive webhooks on your machine');
  if (start < 0) throw new Error('README has no "Receive webhooks on your machine" section');
  const next = README.indexOf('\n## ', start + 3);
  return README.slice(start, next < 0 ? undefined : next);
}

function readmeParts() {
  const text = section();
  const receiver = /```js\n([\s\S]*?)```/.exec(text)?.[1];
  const bodies = [...text.matchAll(/-d '(\{[^']*\})'/g)].map((m) => JSON.parse(m[1]!) as Record<string, unknown>);
  if (!receiver || bodies.length !== 2) throw new Error('README section lost its receiver script or one of its two curl bodies');
  if (!text.includes('LORE_WEBHOOKS_ALLOW_LOOPBACK=true npm start')) throw new Error('README section no longer starts Lore with the setting');
  return { receiver, subscription: bodies[0]!, ingest: bodies[1]! };
}

const dataDir = mkdtempSync(join(tmpdir(), 'lore-local-receiver-'));
const procs: Started[] = [];

afterAll(async () => {
  await Promise.all(procs.map((p) => stopProcess(p)));
  rmSync(dataDir, { recursive: true, force: true });
});

async function startLore(env: Record<string, string>): Promise<{ proc: Started; url: string; key: string }> {
  const port = await freePort();
  const proc = startProcess('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'development', PORT: String(port), LORE_DATA_DIR: dataDir, LORE_OPS_PORT: '0', LORE_ADMIN_PORT: '0', LORE_OCR: 'false', LORE_EMBEDDER: 'hashed', LORE_LOG_LEVEL: 'warn', ...env },
  });
  procs.push(proc);
  const url = `http://127.0.0.1:${port}`;
  const key = await until(
    'Lore to answer with the dev key',
    async () => {
      const { api_key } = JSON.parse(readFileSync(join(dataDir, 'dev-credentials.json'), 'utf8')) as { api_key: string };
      const ping = await fetch(`${url}/api/v1/pages/ping`, { headers: { 'x-api-key': api_key } });
      return ping.status === 200 ? api_key : undefined;
    },
    120_000,
    proc,
  );
  return { proc, url, key };
}

async function post(url: string, key: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('receiving webhooks on this machine (README)', () => {
  const parts = readmeParts();
  let receiverPort: number;
  let hookUrl: string;
  let webhookId: string;
  let receiver: Started;

  it('delivers a signed event from npm start with LORE_WEBHOOKS_ALLOW_LOOPBACK=true to the README receiver, which verifies it', async () => {
    receiverPort = await freePort();
    hookUrl = String(parts.subscription.url).replace(':4000', `:${receiverPort}`);
    expect(hookUrl).toBe(`http://127.0.0.1:${receiverPort}/lore`);
    const lore = await startLore({ LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true' });
    try {
      const created = await post(`${lore.url}/api/v1/webhooks`, lore.key, { ...parts.subscription, url: hookUrl });
      expect(created.status).toBe(201);
      const secret = String(created.json.secret);
      expect(secret).toMatch(/^whsec_/);
      webhookId = String(created.json.webhook_id);

      const script = join(dataDir, 'receiver.mjs');
      writeFileSync(script, parts.receiver.replace('listen(4000', `listen(${receiverPort}`).replace('127.0.0.1:4000', `127.0.0.1:${receiverPort}`));
      receiver = startProcess(process.execPath, [script], { cwd: dataDir, env: { ...process.env, LORE_WEBHOOK_SECRET: secret } });
      procs.push(receiver);
      await until('the receiver to listen', async () => (receiver.output().includes('listening on') ? true : undefined), 20_000, receiver);

      const ingested = await post(`${lore.url}/api/v1/memory/ingest`, lore.key, parts.ingest);
      expect(ingested.status).toBe(200);
      const docId = String(ingested.json.doc_id);
      const line = await until(
        'the receiver to verify the event',
        async () => receiver.output().split('\n').find((l) => l.startsWith('verified memory.ingest.completed') && l.includes(docId)),
        60_000,
        receiver,
      );
      expect(line).toMatch(/^verified memory\.ingest\.completed evt_\S+ \{.*\}$/);
      expect(receiver.output()).not.toContain('refused: bad signature');

      // A body signed with another secret is refused by the same script: the check is real.
      const forged = await fetch(hookUrl, { method: 'POST', headers: { 'x-service-signature': '00'.repeat(32) }, body: '{"event":"memory.ingest.completed"}' });
      expect(forged.status).toBe(401);
    } finally {
      await stopProcess(lore.proc);
    }
  });

  it('without the setting, refuses loopback receivers at creation and does not deliver to the one stored before', async () => {
    // Continues from the test above: its data directory, its stored subscription and its receiver.
    expect(webhookId).toMatch(/^wh/);
    const lore = await startLore({});
    try {
      const refused = await post(`${lore.url}/api/v1/webhooks`, lore.key, { ...parts.subscription, url: hookUrl });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.json)).toMatch(/https/);
      const loopbackHttps = await post(`${lore.url}/api/v1/webhooks`, lore.key, { ...parts.subscription, url: `https://127.0.0.1:${receiverPort}/lore` });
      expect(loopbackHttps.status).toBe(400);
      expect(JSON.stringify(loopbackHttps.json)).toMatch(/loopback/);

      const before = receiver.output().split('\n').filter((l) => l.startsWith('verified')).length;
      const ingested = await post(`${lore.url}/api/v1/memory/ingest`, lore.key, parts.ingest);
      expect(ingested.status).toBe(200);
      const attempt = await until(
        'the stored subscription to record a refused attempt',
        async () => {
          const res = await fetch(`${lore.url}/api/v1/webhooks/${webhookId}/deliveries`, { headers: { 'x-api-key': lore.key } });
          const list = (await res.json()) as { deliveries: Array<{ last_outcome: string | null }> };
          return list.deliveries.find((d) => d.last_outcome === 'refused');
        },
        60_000,
        lore.proc,
      );
      expect(attempt.last_outcome).toBe('refused');
      expect(receiver.output().split('\n').filter((l) => l.startsWith('verified')).length).toBe(before);
    } finally {
      await stopProcess(lore.proc);
    }
  });

  it('refuses to start with the setting when NODE_ENV is production, naming it', async () => {
    const proc = startProcess('npm', ['start'], {
      cwd: ROOT,
      env: { ...process.env, NODE_ENV: 'production', LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true', PORT: String(await freePort()), LORE_DATA_DIR: dataDir, LORE_OPS_PORT: '0' },
    });
    procs.push(proc);
    const code = await new Promise<number | null>((resolve) => {
      if (!proc.alive()) return resolve(proc.child.exitCode);
      proc.child.once('exit', (c) => resolve(c));
    });
    expect(code).not.toBe(0);
    expect(proc.output()).toMatch(/LORE_WEBHOOKS_ALLOW_LOOPBACK: .*refused when NODE_ENV=production/);
  });
});
