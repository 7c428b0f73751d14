import { join } from 'node:path';
import type { Logger } from 'pino';
import { componentLogger } from '../log/logger';
import { Gauge, type Registry } from 'prom-client';
import { runMigrations, type MigrationSet } from '../db/migrate';
import type { Db, Sql } from '../ports/db';
import type { EventBus, OutgoingMessage } from '../ports/event-bus';
import { EVENT_ID_HEADER } from '../bus/event-id';
import { injectTraceHeaders } from '../telemetry/propagation';
import { markOutboxWrite, onOutboxCommit } from './commit-signal';

export interface OutboxMessage {
  topic: string;
  key: string;
  eventId: string;
  /** Serialised as JSON. */
  value: unknown;
  headers?: Record<string, string>;
}

/** The runtime kit's schema: outbox, processed_events, blobs. */
export const RUNTIME_MIGRATIONS: MigrationSet = {
  schema: 'runtime',
  dir: join(__dirname, '..', '..', 'migrations'),
  appPrivileges: {
    // Never DELETE: an event waiting for the broker cannot be erased by application code (prune_outbox removes
    // only rows delivered long ago).
    outbox: ['SELECT', 'INSERT', 'UPDATE'],
    processed_events: ['SELECT', 'INSERT', 'DELETE'],
    bus_checkpoint: ['SELECT', 'INSERT', 'UPDATE'],
  },
};

export async function runRuntimeMigrations(db: Db): Promise<void> {
  await runMigrations(db, RUNTIME_MIGRATIONS);
}

/**
 * Records an event in the caller's transaction (usually `db.withTenant`): it is published if and only if that
 * transaction commits. The active trace context is stored with it, so the consumer continues the request's trace.
 */
export async function enqueueOutbox(sql: Sql, msg: OutboxMessage): Promise<void> {
  if (!msg.topic || !msg.eventId) throw new Error('an outbox message needs a topic and an eventId');
  const value = JSON.stringify(msg.value);
  if (value === undefined) throw new Error('an outbox message needs a JSON-serialisable value');
  const headers = injectTraceHeaders({ ...msg.headers });
  await sql.query(
    `INSERT INTO runtime.outbox (topic, key, event_id, value, headers) VALUES ($1, $2, $3, $4::jsonb, $5::jsonb)`,
    [msg.topic, msg.key, msg.eventId, value, JSON.stringify(headers)],
    { prepare: true },
  );
  markOutboxWrite(sql);
}

/**
 * Records several events in the caller's transaction with ONE statement, in the order given (their ids follow it,
 * so the relay publishes them in that order): what `enqueueOutbox` for each does, in one round trip. The messages
 * travel as one JSON array, each value as its JSON; an empty list writes nothing. Any message that `enqueueOutbox`
 * would refuse refuses the whole list before anything is written.
 */
export async function enqueueOutboxBatch(sql: Sql, msgs: readonly OutboxMessage[]): Promise<void> {
  if (msgs.length === 0) return;
  const rows: string[] = [];
  for (const msg of msgs) {
    if (!msg.topic || !msg.eventId) throw new Error('an outbox message needs a topic and an eventId');
    const value = JSON.stringify(msg.value);
    if (value === undefined) throw new Error('an outbox message needs a JSON-serialisable value');
    const headers = injectTraceHeaders({ ...msg.headers });
    rows.push(`{"topic":${JSON.stringify(msg.topic)},"key":${JSON.stringify(msg.key)},"event_id":${JSON.stringify(msg.eventId)},"value":${value},"headers":${JSON.stringify(headers)}}`);
  }
  await sql.query(
    `INSERT INTO runtime.outbox (topic, key, event_id, value, headers)
     SELECT m->>'topic', m->>'key', m->>'event_id', m->'value', m->'headers'
       FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(m, n)
      ORDER BY n`,
    [`[${rows.join(',')}]`],
    { prepare: true },
  );
  markOutboxWrite(sql);
}

/**
 * Idempotency marker for consumers: true the first time `consumer` claims `eventId`, false for a redelivery. Call it
 * in the same transaction as the side effects, so a rolled-back attempt leaves the event unclaimed.
 */
export async function claimEvent(sql: Sql, consumer: string, eventId: string): Promise<boolean> {
  const r = await sql.query(
    `INSERT INTO runtime.processed_events (consumer, event_id) VALUES ($1, $2) ON CONFLICT (consumer, event_id) DO NOTHING`,
    [consumer, eventId],
    { prepare: true },
  );
  return r.rowCount === 1;
}

export interface OutboxRelayOptions {
  db: Db;
  bus: EventBus;
  logger: Logger;
  metrics?: Registry;
  /** Pause between scans when the outbox was empty. Default 200 ms. */
  pollIntervalMs?: number;
  /** Rows published per transaction. Default 100. */
  batchSize?: number;
  /** How long published rows are kept before pruning. Default 24 h. */
  retentionMs?: number;
  /**
   * How long consumers' idempotency markers (`runtime.processed_events`) are kept. A redelivery older than this
   * would be handled again, so it should exceed the broker's retention of the topics. Default 7 days.
   */
  processedRetentionMs?: number;
  /**
   * A bus whose messages end with the process (embedded mode's MemoryBus): `idle()` is true when every message
   * published so far has been handled by every group. While it is, the relay records the last row it had published
   * (`runtime.bus_checkpoint`); when it starts, it publishes again every row after that one, which the process that
   * ended may have left unhandled (an accepted document never indexed, a job never run). Consumers dedupe on
   * `event-id`, as they do Kafka's redeliveries. Never for Kafka, which keeps what it was given.
   */
  volatileBus?: { idle(): boolean };
}

interface OutboxRow {
  id: string;
  topic: string;
  key: string;
  event_id: string;
  value: string;
  headers: Record<string, string>;
}

/** Any constant shared by every relay of a database: only one relay publishes at a time, in id order. */
const RELAY_LOCK = 'lore.outbox.relay';
const PRUNE_EVERY_MS = 60_000;
/** Idempotency markers deleted per statement, and statements per prune (the rest waits for the next one). */
const PRUNE_BATCH = 5_000;
const PRUNE_MAX_BATCHES = 20;
const MAX_ERROR_BACKOFF_MS = 10_000;
/** Starts in a row that may publish the same rows again (`volatileBus`) before the relay gives them up. */
const MAX_REPLAYS = 3;

/**
 * Publishes outbox rows in id order and marks them published only after the broker acknowledged: a crash between
 * the two publishes the rows again (consumers dedupe on `event-id`), never loses them. Several replicas may run; a
 * transaction-scoped advisory lock lets one publish at a time so order is kept.
 */
export class OutboxRelay {
  private readonly db: Db;
  private readonly bus: EventBus;
  private readonly logger: Logger;
  private readonly pollIntervalMs: number;
  private readonly batchSize: number;
  private readonly retentionMs: number;
  private readonly processedRetentionMs: number;
  private loop?: Promise<void>;
  private stopping = false;
  private wake?: () => void;
  private lastPrune = 0;
  /** The last scan held the lock and found nothing: a commit of outbox rows in this process wakes the relay. */
  private idle = false;
  private sleeping = false;
  /** A commit of outbox rows in this process was reported since the current scan began. */
  private nudged = false;
  private unsubscribe?: () => void;
  private readonly volatileBus?: { idle(): boolean };
  /** The last row this relay published, and the last one recorded as handled (`volatileBus`). */
  private lastPublished: bigint | null = null;
  private checkpointed: bigint | null = null;

  constructor(opts: OutboxRelayOptions) {
    this.volatileBus = opts.volatileBus;
    this.db = opts.db;
    this.bus = opts.bus;
    this.logger = componentLogger(opts.logger, 'outbox-relay');
    this.pollIntervalMs = opts.pollIntervalMs ?? 200;
    this.batchSize = opts.batchSize ?? 100;
    this.retentionMs = opts.retentionMs ?? 24 * 3600_000;
    this.processedRetentionMs = opts.processedRetentionMs ?? 7 * 24 * 3600_000;
    if (opts.metrics) this.registerBacklogGauge(opts.metrics);
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.unsubscribe = onOutboxCommit(() => this.nudge());
    this.loop = this.run();
  }

  /** Finishes the batch in progress (so nothing is published twice needlessly), then returns. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
  }

  /**
   * Outbox rows committed in this process (commit-signal.ts). An idle relay (its last scan found nothing) scans at
   * once instead of at its next poll, so a lone event waits for no poll; a relay that is publishing, or whose last
   * scan found another relay holding the lock, keeps its poll, so a steady stream of events costs no more scans than
   * before. A report during a scan that then finds nothing brings one more scan at once: the rows committed after
   * its read.
   */
  private nudge(): void {
    if (this.stopping) return;
    this.nudged = true;
    if (this.sleeping && this.idle) this.wake?.();
  }

  /**
   * Publishes one batch; returns how many rows it published (0 when empty or another relay holds the lock). A
   * failure after part of the batch was acknowledged still marks that part, then throws.
   */
  async drainOnce(): Promise<number> {
    return (await this.drain()).published;
  }

  /** `drainOnce`, also telling whether this relay held the lock. */
  private async drain(): Promise<{ published: number; locked: boolean }> {
    let failure: unknown;
    let locked = false;
    const published = await this.db.tx(async (sql) => {
      const lock = await sql.query<{ locked: boolean }>(`SELECT pg_try_advisory_xact_lock(hashtext($1)) AS locked`, [RELAY_LOCK], { prepare: true });
      if (!lock.rows[0]?.locked) return 0;
      locked = true;
      const { rows } = await sql.query<OutboxRow>(
        `SELECT id, topic, key, event_id, value::text AS value, headers FROM runtime.outbox
          WHERE published_at IS NULL ORDER BY id LIMIT $1`,
        [this.batchSize],
        { prepare: true },
      );
      const done: string[] = [];
      try {
        // Consecutive rows of one topic go in one request; the order of the rows is the order on the wire.
        for (let i = 0; i < rows.length; ) {
          let j = i;
          while (j < rows.length && rows[j]!.topic === rows[i]!.topic) j++;
          const run = rows.slice(i, j);
          await this.bus.publish(run[0]!.topic, run.map(toMessage));
          done.push(...run.map((r) => r.id));
          i = j;
        }
      } catch (err) {
        failure = err;
      }
      if (done.length > 0) {
        await sql.query(`UPDATE runtime.outbox SET published_at = now() WHERE id = ANY($1::bigint[])`, [done], { prepare: true });
        // Rows go out in id order: the last is the highest.
        this.lastPublished = BigInt(done[done.length - 1]!);
      }
      return done.length;
    });
    if (failure) throw failure;
    return { published, locked };
  }

  /**
   * `volatileBus`: marks every row published after the last checkpoint as not published, so this relay publishes
   * them again, in order, before anything newer. After `MAX_REPLAYS` starts in a row that did so without the
   * checkpoint moving (the process ended each time before its bus had handled them: one of them may be what ends
   * it), those rows are given up instead and the checkpoint moves past them, as a crash loop's message is
   * dead-lettered on Kafka (the start journal).
   */
  private async replayAfterCheckpoint(): Promise<{ replayed: number; givenUp: number }> {
    return this.db.tx(async (sql) => {
      await sql.query(`INSERT INTO runtime.bus_checkpoint (id, outbox_id) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`);
      const cp = (await sql.query<{ outbox_id: string; replays: number }>(`SELECT outbox_id::text, replays FROM runtime.bus_checkpoint WHERE id = 1 FOR UPDATE`)).rows[0]!;
      const after = await sql.query<{ n: string; last: string | null }>(
        `SELECT count(*)::text AS n, max(id)::text AS last FROM runtime.outbox WHERE published_at IS NOT NULL AND id > $1`,
        [cp.outbox_id],
      );
      const n = Number(after.rows[0]?.n ?? 0);
      if (n === 0) return { replayed: 0, givenUp: 0 };
      if (cp.replays >= MAX_REPLAYS) {
        await sql.query(`UPDATE runtime.bus_checkpoint SET outbox_id = $1, replays = 0, updated_at = now() WHERE id = 1`, [after.rows[0]!.last]);
        return { replayed: 0, givenUp: n };
      }
      await sql.query(`UPDATE runtime.outbox SET published_at = NULL WHERE published_at IS NOT NULL AND id > $1`, [cp.outbox_id]);
      await sql.query(`UPDATE runtime.bus_checkpoint SET replays = replays + 1, updated_at = now() WHERE id = 1`);
      return { replayed: n, givenUp: 0 };
    });
  }

  /**
   * `volatileBus`: records the last row published before the bus was seen idle. It is read before the bus is asked,
   * and rows reach the bus before they count as published, so every row up to it has been handled.
   */
  private async checkpointIfIdle(): Promise<void> {
    const upTo = this.lastPublished;
    if (!this.volatileBus || upTo === null || upTo === this.checkpointed || !this.volatileBus.idle()) return;
    await this.db.query(
      `INSERT INTO runtime.bus_checkpoint (id, outbox_id) VALUES (1, $1)
       ON CONFLICT (id) DO UPDATE SET outbox_id = GREATEST(runtime.bus_checkpoint.outbox_id, EXCLUDED.outbox_id), replays = 0, updated_at = now()`,
      [upTo.toString()],
    );
    this.checkpointed = upTo;
  }

  private async run(): Promise<void> {
    let errors = 0;
    if (this.volatileBus) {
      // Before the first drain: what the ended process's bus may have lost goes out first, in its order.
      for (let attempt = 1; !this.stopping; attempt++) {
        try {
          const { replayed, givenUp } = await this.replayAfterCheckpoint();
          if (replayed > 0) this.logger.info({ rows: replayed }, 'outbox rows the ended process may have left unhandled are published again');
          if (givenUp > 0) {
            this.logger.error({ rows: givenUp, starts: MAX_REPLAYS }, 'outbox rows published again on several starts in a row were never handled before the process ended: given up (one of them may end the process)');
          }
          break;
        } catch (err) {
          this.logger.warn({ err, attempt }, 'could not read the bus checkpoint; retrying');
          await this.sleep(Math.min(MAX_ERROR_BACKOFF_MS, this.pollIntervalMs * 2 ** Math.min(attempt, 10)));
        }
      }
    }
    while (!this.stopping) {
      let delay = this.pollIntervalMs;
      this.idle = false;
      this.nudged = false;
      try {
        const { published, locked } = await this.drain();
        errors = 0;
        if (published >= this.batchSize) delay = 0;
        this.idle = locked && published === 0;
        await this.checkpointIfIdle();
        await this.pruneIfDue();
      } catch (err) {
        errors += 1;
        delay = Math.min(MAX_ERROR_BACKOFF_MS, this.pollIntervalMs * 2 ** Math.min(errors, 10));
        this.logger.warn({ err, attempt: errors, delay_ms: delay }, 'outbox relay failed; retrying');
      }
      if (this.idle && this.nudged) delay = 0;
      if (delay > 0 && !this.stopping) await this.sleep(delay);
    }
  }

  private async pruneIfDue(): Promise<void> {
    if (Date.now() - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = Date.now();
    const { outbox, processed } = await this.prune();
    if (outbox + processed > 0) this.logger.debug({ outbox, processed_events: processed }, 'pruned old outbox rows and idempotency markers');
  }

  /**
   * Removes published outbox rows older than the retention and idempotency markers older than theirs (each in
   * bounded batches, so no long lock); the relay does this once a minute. Returns how many rows each lost.
   */
  async prune(): Promise<{ outbox: number; processed: number }> {
    const r = await this.db.query<{ pruned: string }>(`SELECT runtime.prune_outbox(make_interval(secs => $1)) AS pruned`, [
      this.retentionMs / 1000,
    ]);
    let processed = 0;
    for (let batch = 0; batch < PRUNE_MAX_BATCHES; batch++) {
      const d = await this.db.query(
        `DELETE FROM runtime.processed_events WHERE ctid IN (
           SELECT ctid FROM runtime.processed_events WHERE processed_at < now() - make_interval(secs => $1) LIMIT $2)`,
        [this.processedRetentionMs / 1000, PRUNE_BATCH],
      );
      processed += d.rowCount ?? 0;
      if ((d.rowCount ?? 0) < PRUNE_BATCH) break;
    }
    return { outbox: Number(r.rows[0]?.pruned ?? 0), processed };
  }

  private sleep(ms: number): Promise<void> {
    this.sleeping = true;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    }).finally(() => {
      this.sleeping = false;
    });
  }

  private registerBacklogGauge(registry: Registry): void {
    const name = 'lore_outbox_backlog_messages';
    if (registry.getSingleMetric(name)) return;
    const db = this.db;
    const logger = this.logger;
    new Gauge({
      name,
      help: 'Outbox rows committed but not yet acknowledged by the broker',
      registers: [registry],
      async collect() {
        try {
          const r = await db.query<{ n: string }>(`SELECT count(*) AS n FROM runtime.outbox WHERE published_at IS NULL`);
          this.set(Number(r.rows[0]?.n ?? 0));
        } catch (err) {
          logger.warn({ err }, 'could not measure the outbox backlog');
        }
      },
    });
  }
}

function toMessage(row: OutboxRow): OutgoingMessage {
  return {
    key: row.key,
    value: Buffer.from(row.value, 'utf8'),
    headers: { ...row.headers, [EVENT_ID_HEADER]: row.event_id },
  };
}
