import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { requireEnv, uniqueSuffix } from '../support/infra';
import { freePort } from '../gateway/processes';
import { eventually, SECRET, startHarness, type Harness } from './support';

jest.setTimeout(180_000);

const ROOT = join(__dirname, '..', '..');

/** graph-worker as a real process: its /readyz names each consumer group it is in, with the lag (docs/runtime.md). */
describe('graph-worker readiness', () => {
  let h: Harness & { database?: { url: string; ownerUrl: string } };
  let child: ChildProcess | undefined;
  const logs: string[] = [];

  beforeAll(async () => {
    h = await startHarness({ backend: 'postgres', worker: false });
  });
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await h?.close();
  });

  it('is ready on LORE_GRAPH_WORKER_PORT once it is a member of its three consumer groups, with their lag as details', async () => {
    const group = `graph-worker-ready-${uniqueSuffix()}`;
    const port = await freePort();
    child = spawn(process.execPath, ['--conditions=lore-src', '--import', 'tsx', join(ROOT, 'services/graph/src/worker-main.ts')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        LORE_LOG_LEVEL: 'warn',
        LORE_DATABASE_URL: h.database!.url,
        LORE_DATABASE_OWNER_URL: h.database!.ownerUrl,
        LORE_KAFKA_BROKERS: requireEnv('LORE_TEST_KAFKA_BROKERS'),
        LORE_IDENTITY_SECRET: SECRET,
        LORE_GRAPH_HOST: '127.0.0.1',
        LORE_GRAPH_WORKER_PORT: String(port),
        LORE_GRAPH_OCR: 'false',
        LORE_EMBEDDER: 'hashed',
        LORE_GRAPH_CONSUMER_GROUP: group,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d: Buffer) => logs.push(d.toString()));
    child.stderr?.on('data', (d: Buffer) => logs.push(d.toString()));

    const body = await eventually(async () => {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      return r?.status === 200 ? ((await r.json()) as { checks: Record<string, { ok: boolean; groups: Array<Record<string, unknown>> }> }) : undefined;
    }, 120_000);
    const check = body.checks['consumer groups']!;
    expect(check.ok).toBe(true);
    expect(check.groups.map((g) => g.group).sort()).toEqual([group, `${group}-lifecycle`, `${group}-uploads`]);
    for (const g of check.groups) expect(g).toEqual(expect.objectContaining({ state: 'member', lag: expect.any(Object) }));
  });
});
