import type { Sql } from '../ports/db';

/**
 * Where the consumers of a group last started on each partition, kept outside the process. Poison handling counts
 * a message's failed attempts in memory, which a message whose handling kills the process (a native crash, an
 * out-of-memory kill, a `process.exit` in a library, a hang until SIGKILL) never reaches: every restart resumes at
 * the last committed offset and dies again. The journal counts those starts instead (see `PartitionStarts`).
 *
 * Group and topic are the names on the broker (with the install's prefix); offsets are Kafka offsets as strings.
 */
export interface ConsumerStartJournal {
  /**
   * A consumer is about to handle `offset` first (after it got the partition, or while it goes one message at a
   * time): the same offset as stored counts one start more, another offset starts the count again at 1. Returns the
   * count, this start included.
   */
  record(group: string, topic: string, partition: number, offset: string): Promise<number>;
  /**
   * A graceful stop: what this consumer recorded for the partition is no crash. With `offset`, only a record still
   * at that offset is removed (another consumer may have moved on since and is counting its own starts).
   */
  forget(group: string, topic: string, partition: number, offset?: string): Promise<void>;
}

/** The journal in the process's memory: for tests, and for a bus whose restarts are not worth counting. */
export class MemoryStartJournal implements ConsumerStartJournal {
  private readonly rows = new Map<string, { offset: string; starts: number }>();

  async record(group: string, topic: string, partition: number, offset: string): Promise<number> {
    const key = rowKey(group, topic, partition);
    const row = this.rows.get(key);
    const starts = row !== undefined && row.offset === offset ? row.starts + 1 : 1;
    this.rows.set(key, { offset, starts });
    return starts;
  }

  async forget(group: string, topic: string, partition: number, offset?: string): Promise<void> {
    const key = rowKey(group, topic, partition);
    if (offset === undefined || this.rows.get(key)?.offset === offset) this.rows.delete(key);
  }

  /** What is stored for a partition (tests). */
  peek(group: string, topic: string, partition: number): { offset: string; starts: number } | undefined {
    const row = this.rows.get(rowKey(group, topic, partition));
    return row && { ...row };
  }
}

/**
 * The journal in `runtime.consumer_starts` (migration 0002), one row per group and partition. One statement per
 * call, outside any tenant (the table is not tenant-scoped, like the outbox).
 */
export class PostgresStartJournal implements ConsumerStartJournal {
  constructor(private readonly db: Sql) {}

  async record(group: string, topic: string, partition: number, offset: string): Promise<number> {
    const r = await this.db.query<{ starts: number }>(
      `INSERT INTO runtime.consumer_starts AS s (consumer_group, topic, partition, message_offset, starts)
       VALUES ($1, $2, $3, $4::bigint, 1)
       ON CONFLICT (consumer_group, topic, partition) DO UPDATE
         SET starts = CASE WHEN s.message_offset = excluded.message_offset THEN s.starts + 1 ELSE 1 END,
             message_offset = excluded.message_offset,
             updated_at = now()
       RETURNING starts`,
      [group, topic, partition, offset],
      { prepare: true },
    );
    const starts = r.rows[0]?.starts;
    if (typeof starts !== 'number') throw new Error('the start journal did not return a count');
    return starts;
  }

  async forget(group: string, topic: string, partition: number, offset?: string): Promise<void> {
    await this.db.query(
      `DELETE FROM runtime.consumer_starts
        WHERE consumer_group = $1 AND topic = $2 AND partition = $3 AND ($4::bigint IS NULL OR message_offset = $4::bigint)`,
      [group, topic, partition, offset ?? null],
      { prepare: true },
    );
  }
}

function rowKey(group: string, topic: string, partition: number): string {
  return JSON.stringify([group, topic, partition]);
}
