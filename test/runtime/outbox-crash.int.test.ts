import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'pg';
import { waitFor } from '../../services/runtime/src/bus/bus.contract';
import { eventIdOf } from '../../services/runtime/src/bus/event-id';
import { KafkaBus } from '../../services/runtime/src/bus/kafka-bus';
import { claimEvent, runRuntimeMigrations } from '../../services/runtime/src/outbox/outbox';
import type { Subscription } from '../../services/runtime/src/ports/event-bus';
import type { PostgresDb } from '../../services/runtime/src/db/postgres';
import { requireEnv, type TestDatabase } from '../support/infra';
import { freshPostgresDb, silentLogger } from './support';

jest.setTimeout(180_000);

const CHILD = join(__dirname, 'fixtures', 'outbox-crash-child.ts');

interface Run {
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when the child printed `marker`. */
  said(marker: string): Promise<void>;
  kill(): void;
  stderr(): string;
}

/** A real child process (node + tsx) running the crash fixture. */
function runChild(env: Record<string, string>): Run {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const listeners: Array<() => void> = [];
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    listeners.forEach((l) => l());
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    exit,
    said: (marker) =>
      new Promise((resolve, reject) => {
        const check = () => out.split('\n').includes(marker) && resolve();
        listeners.push(check);
        check();
        void exit.then(({ code, signal }) => reject(new Error(`child exited (${code ?? signal}) before ${marker}: ${err}`)));
      }),
    kill: () => child.kill('SIGKILL'),
    stderr: () => err,
  };
}

describe('Outbox: a process killed between commit and publish', () => {
  let pg: { db: PostgresDb; database: TestDatabase; close(): Promise<void> };
  let bus: KafkaBus;
  let subscription: Subscription;
  const topic = `lore.outbox-crash.${randomBytes(4).toString('hex')}`;
  const deliveries: string[] = [];

  beforeAll(async () => {
    pg = await freshPostgresDb();
    await runRuntimeMigrations(pg.db);
    const owner = new Client({ connectionString: pg.database.ownerUrl });
    await owner.connect();
    await owner.query(`
      CREATE TABLE public.documents (tenant_id text NOT NULL, id text PRIMARY KEY);
      CREATE TABLE public.effects (event_id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
      GRANT SELECT, INSERT ON public.documents, public.effects TO lore_app;`);
    await owner.end();
    bus = new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), clientId: 'crash-consumer', logger: silentLogger, partitions: 3 });
    await bus.ensureTopics([topic]);
    // An idempotent consumer: the side effect and the claim commit together, so a duplicate changes nothing.
    subscription = await bus.subscribe({ groupId: `crash-${randomBytes(3).toString('hex')}`, topics: [topic], fromBeginning: true }, async (m) => {
      const eventId = eventIdOf(m)!;
      deliveries.push(eventId);
      await pg.db.withTenant('t-crash', async (sql) => {
        if (await claimEvent(sql, 'crash-test', eventId)) await sql.query(`INSERT INTO public.effects (event_id) VALUES ($1)`, [eventId]);
      });
    });
  });

  afterAll(async () => {
    await subscription?.stop();
    await bus?.close();
    await pg?.close();
  });

  const childEnv = (mode: string, eventId = '') => ({
    LORE_CRASH_MODE: mode,
    LORE_CRASH_TOPIC: topic,
    LORE_CRASH_DB_URL: pg.database.url,
    LORE_CRASH_EVENT_ID: eventId,
  });
  const effectsOf = async (eventId: string) =>
    Number((await pg.db.query<{ n: string }>(`SELECT count(*) AS n FROM public.effects WHERE event_id = $1`, [eventId])).rows[0]!.n);

  async function restartAndDrain(): Promise<void> {
    const relay = runChild(childEnv('relay'));
    await relay.said('DRAINED');
    expect(await relay.exit).toEqual({ code: 0, signal: null });
  }

  it('killed after the commit, before any publish: the restarted relay publishes the event once', async () => {
    const eventId = randomUUID();
    const first = runChild(childEnv('after-commit', eventId));
    await first.said('COMMITTED');
    first.kill();
    expect((await first.exit).signal).toBe('SIGKILL');
    const pending = await pg.db.query(`SELECT 1 FROM runtime.outbox WHERE event_id = $1 AND published_at IS NULL`, [eventId]);
    expect(pending.rowCount).toBe(1);
    expect(deliveries).not.toContain(eventId);

    await restartAndDrain();
    await waitFor('the event', () => deliveries.includes(eventId), 30_000);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(deliveries.filter((d) => d === eventId)).toHaveLength(1);
    expect(await effectsOf(eventId)).toBe(1);
  });

  it('killed after the broker acknowledged, before the row was marked: a duplicate with the same event id, applied once', async () => {
    const eventId = randomUUID();
    const first = runChild(childEnv('after-ack', eventId));
    await first.said('ACKED');
    first.kill();
    expect((await first.exit).signal).toBe('SIGKILL');
    await waitFor('the first delivery', () => deliveries.includes(eventId), 30_000);
    const pending = await pg.db.query(`SELECT 1 FROM runtime.outbox WHERE event_id = $1 AND published_at IS NULL`, [eventId]);
    expect(pending.rowCount).toBe(1);

    await restartAndDrain();
    await waitFor('the duplicate', () => deliveries.filter((d) => d === eventId).length >= 2, 30_000);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(deliveries.filter((d) => d === eventId)).toHaveLength(2);
    expect(await effectsOf(eventId)).toBe(1);
    const published = await pg.db.query(`SELECT 1 FROM runtime.outbox WHERE event_id = $1 AND published_at IS NOT NULL`, [eventId]);
    expect(published.rowCount).toBe(1);
  });
});
