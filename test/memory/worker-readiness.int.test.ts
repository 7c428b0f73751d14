import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { TOPICS } from '@lore/contracts';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { requireEnv, uniqueSuffix } from '../support/infra';
import { freePort } from '../gateway/processes';
import { eventually, SECRET, startHarness, type Harness } from './support';

jest.setTimeout(180_000);

const ROOT = join(__dirname, '..', '..');

/** graph-worker as a real process: its /readyz names each consumer group it is in, with the lag (docs/runtime.md). */
describe('graph-worker readiness', () => {
  let h: Harness & { database?: { url: string; ownerUrl: string } };
  let child: ChildProcess | undefined;
  let holder: Consumer | undefined;
  let release: () => void = () => undefined;
  const logs: string[] = [];

  beforeAll(async () => {
    h = await startHarness({ backend: 'postgres', worker: false });
  });
  afterAll(async () => {
    release();
    await holder?.disconnect();
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await h?.close();
  });

  it('answers /readyz 503 on LORE_GRAPH_WORKER_PORT while a consumer group has not taken it in, then 200 with each group and its lag', async () => {
    const group = `graph-worker-ready-${uniqueSuffix()}`;
    const port = await freePort();
    // Another member of the worker's lifecycle group, busy in a handler: the coordinator answers the worker's
    // JoinGroup only after every existing member rejoined, which this one does only once its handler returned.
    await h.bus.ensureTopics([TOPICS.memoryLifecycle]);
    await h.bus.publish(TOPICS.memoryLifecycle, [{ key: 'readiness-hold', value: '{}' }]);
    const kafka = new Kafka({ clientId: 'graph-worker-readiness-holder', brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING });
    holder = kafka.consumer({ groupId: `${group}-lifecycle`, sessionTimeout: 90_000, rebalanceTimeout: 90_000 });
    const released = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    await holder.connect();
    await holder.subscribe({ topics: [TOPICS.memoryLifecycle], fromBeginning: true });
    await holder.run({
      eachMessage: async () => {
        entered();
        await released;
      },
    });
    await inHandler;
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

    // The probe listener answers before the consumers have joined; the held group keeps the worker from starting.
    const before = await eventually(async () => {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      return r ? { status: r.status, body: (await r.json()) as unknown } : undefined;
    }, 120_000);
    expect(before).toEqual({ status: 503, body: { status: 'not_ready', checks: { lifecycle: 'starting' } } });
    expect((await fetch(`http://127.0.0.1:${port}/livez`)).status).toBe(200);

    release();
    const body = await eventually(async () => {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      return r?.status === 200 ? ((await r.json()) as { checks: Record<string, { ok: boolean; groups: Array<Record<string, unknown>> }> }) : undefined;
    }, 120_000);
    const check = body.checks['consumer groups']!;
    expect(check.ok).toBe(true);
    expect(check.groups.map((g) => g.group).sort()).toEqual([group, `${group}-graph-jobs`, `${group}-lifecycle`, `${group}-uploads`]);
    for (const g of check.groups) expect(g).toEqual(expect.objectContaining({ state: 'member', lag: expect.any(Object) }));
  });
});
