/**
 * Crash loops: a message whose handling kills the consumer process (here process.exit(137), as a native crash or an
 * out-of-memory kill would) must not stop its partition for ever. Real child processes consume with a real KafkaBus
 * and the PostgreSQL start journal; the test restarts each one that dies, as Kubernetes would.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KafkaBus } from '../../services/runtime/src/bus/kafka-bus';
import { listDeadLetters } from '../../services/runtime/src/bus/dead-letters';
import { runRuntimeMigrations } from '../../services/runtime/src/outbox/outbox';
import type { PostgresDb } from '../../services/runtime/src/db/postgres';
import { requireEnv, type TestDatabase } from '../support/infra';
import { freshPostgresDb, silentLogger } from './support';

jest.setTimeout(400_000);

const CHILD = join(__dirname, 'fixtures', 'crash-loop-child.ts');
const ROOT = join(__dirname, '..', '..');
const MAX_STARTS = 3;

interface Child {
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
  /** Resolves once the child printed `line` at least `times` times. */
  said(line: string, times?: number): Promise<void>;
  term(): void;
  kill(): void;
  stderr(): string;
}

const children = new Set<Child>();

function runChild(env: Record<string, string>): Child {
  const proc = spawn(process.execPath, ['--conditions=lore-src', '--import', 'tsx', CHILD], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let running = true;
  const listeners = new Set<() => void>();
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    listeners.forEach((l) => l());
  });
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('exit', (code, signal) => {
      running = false;
      resolve({ code, signal });
    }),
  );
  const child: Child = {
    exit,
    alive: () => running,
    said: (line, times = 1) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (out.split('\n').filter((l) => l === line).length >= times) {
            listeners.delete(check);
            resolve();
          }
        };
        listeners.add(check);
        check();
        void exit.then(({ code, signal }) => reject(new Error(`child exited (${code ?? signal}) before saying ${line} ${times} times: ${err}`)));
      }),
    term: () => proc.kill('SIGTERM'),
    kill: () => proc.kill('SIGKILL'),
    stderr: () => err,
  };
  children.add(child);
  void exit.then(() => children.delete(child));
  return child;
}

/** Polls `check` until it is true, failing after `timeoutMs` or as soon as `abort` says so. */
async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number, abort: () => boolean = () => false): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (abort()) return false;
    if (await check()) return true;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('a message whose handling kills the consumer process', () => {
  const prefix = `crash-loop-${randomBytes(4).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'lore-crash-loop-'));
  let pg: { db: PostgresDb; database: TestDatabase; close(): Promise<void> };
  let bus: KafkaBus;

  beforeAll(async () => {
    pg = await freshPostgresDb();
    await runRuntimeMigrations(pg.db);
    bus = new KafkaBus({ brokers: requireEnv('LORE_TEST_KAFKA_BROKERS').split(','), clientId: 'crash-loop-parent', prefix, logger: silentLogger, partitions: 1 });
  });

  afterAll(async () => {
    for (const child of children) child.kill();
    await Promise.all([...children].map((c) => c.exit));
    await bus?.close();
    await pg?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const childEnv = (mode: string, topic: string, group: string, extra: Record<string, string> = {}) => ({
    LORE_CRASH_MODE: mode,
    LORE_CRASH_PREFIX: prefix,
    LORE_CRASH_TOPIC: topic,
    LORE_CRASH_GROUP: group,
    LORE_CRASH_DB_URL: pg.database.url,
    LORE_CRASH_HANDLED: join(dir, `${group}.handled`),
    LORE_CRASH_KILL_KEY: 'boom',
    LORE_CRASH_MAX_STARTS: String(MAX_STARTS),
    ...extra,
  });
  const handled = (group: string): string[] => {
    const file = join(dir, `${group}.handled`);
    return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  };
  const journalRows = async (group: string) =>
    (
      await pg.db.query<{ message_offset: string; starts: number }>(
        `SELECT message_offset, starts FROM runtime.consumer_starts WHERE consumer_group = $1 ORDER BY partition`,
        [`${prefix}.${group}`],
      )
    ).rows;

  it.each([
    ['subscribe (eachMessage)', 'each'],
    ['subscribeBatch (eachBatch)', 'batch'],
  ])('%s: is dead-lettered after a bounded number of crashes; the others are handled and the process then stays up', async (_name, mode) => {
    const topic = `lore.crash-loop.${mode}`;
    const group = `crash-loop-${mode}`;
    await bus.ensureTopics([topic]);
    // One produce request: one partition, the crasher second.
    await bus.publish(
      topic,
      ['ok1', 'boom', 'ok2', 'ok3'].map((key) => ({ key, value: JSON.stringify({ key }) })),
    );

    const started = Date.now();
    const deaths: Array<{ code: number | null; signal: NodeJS.Signals | null }> = [];
    let child: Child;
    for (;;) {
      child = runChild(childEnv(mode, topic, group));
      const current = child;
      const done = until(
        'ok1, ok2 and ok3 handled and the group caught up',
        async () => ['ok1', 'ok2', 'ok3'].every((k) => handled(group).includes(k)) && (await bus.groupLag(group, [topic]))[topic] === 0,
        120_000,
        () => !current.alive(),
      );
      const outcome = await Promise.race([current.exit.then((e) => ({ exited: e })), done.then((ok) => ({ ok }))]);
      if ('ok' in outcome && outcome.ok) break;
      const exited = await current.exit;
      expect({ exit: exited, stderr: exited.code === 137 ? '' : current.stderr() }).toEqual({ exit: { code: 137, signal: null }, stderr: '' });
      deaths.push(exited);
      if (deaths.length > MAX_STARTS + 3) throw new Error(`still crashing after ${deaths.length} restarts`);
    }

    // One stop somewhere in the first fetch, one that pins the message down (one at a time), then MAX_STARTS - 1
    // more with it as the first message; the next start dead-letters it unhandled.
    expect(deaths).toHaveLength(MAX_STARTS + 1);
    const dead = await listDeadLetters(bus, { group });
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ topic, group, key: 'boom', partition: 0, offset: '1', attempts: MAX_STARTS });
    expect(dead[0]!.error).toMatch(new RegExp(`stopped ${MAX_STARTS} times while handling this message`));
    expect(JSON.parse(dead[0]!.value.toString('utf8'))).toEqual({ key: 'boom' });
    // Everything else was handled (ok1 more than once: at least once), the crasher never completed.
    expect(new Set(handled(group))).toEqual(new Set(['ok1', 'ok2', 'ok3']));

    // The process that dead-lettered it is still up, with nothing left to do, and stops gracefully.
    expect(child.alive()).toBe(true);
    child.term();
    expect(await child.exit).toEqual({ code: 0, signal: null });
    expect(await journalRows(group)).toEqual([]);
    process.stdout.write(`crash loop (${mode}): ${deaths.length} deaths, ${handled(group).length} handlings, ${Date.now() - started} ms\n`);
  });

  it('a graceful stop while a message is in a long retry is no crash: stopped more than maxStarts times, it is still handled', async () => {
    const topic = 'lore.crash-loop.graceful';
    const group = 'crash-loop-graceful';
    const release = join(dir, 'release');
    await bus.ensureTopics([topic]);
    await bus.publish(topic, [
      { key: 'waits', value: '{}' },
      { key: 'after', value: '{}' },
    ]);
    const env = childEnv('each', topic, group, { LORE_CRASH_TRANSIENT_KEY: 'waits', LORE_CRASH_RELEASE: release });

    for (let round = 1; round <= MAX_STARTS + 2; round++) {
      const child = runChild(env);
      // In its retry loop: failed twice, backing off.
      await child.said('ATTEMPT waits', 2);
      // This start is recorded, and it is the only one counted: the stops before were graceful.
      expect(await journalRows(group)).toEqual([{ message_offset: '0', starts: 1 }]);
      child.term();
      expect(await child.exit).toEqual({ code: 0, signal: null });
      expect(await journalRows(group)).toEqual([]);
    }
    expect(handled(group)).toEqual([]);

    // The dependency is back.
    writeFileSync(release, '');
    const child = runChild(env);
    await until('waits and after to be handled', () => handled(group).length >= 2, 60_000, () => !child.alive());
    expect(handled(group)).toEqual(['waits', 'after']);
    expect(await listDeadLetters(bus, { group })).toEqual([]);
    child.term();
    expect(await child.exit).toEqual({ code: 0, signal: null });
  });
});
