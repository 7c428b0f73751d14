import type { Sql } from '../ports/db';

/**
 * How an outbox relay hears, in its own process, that a transaction holding outbox rows committed: `enqueueOutbox`
 * marks the transaction's `Sql`, the database adapter reports the commit of a marked one (`outboxCommitted`), and
 * every relay started in the process is told (`onOutboxCommit`). A relay that found the outbox empty then publishes
 * at once instead of at its next poll (docs/runtime.md, "When the relay scans"). Rows written by another process wait
 * for the poll, as before; nothing here is needed for correctness, only for the first event's latency.
 */
const marked = new WeakSet<Sql>();
const listeners = new Set<() => void>();

/** Called by `enqueueOutbox` with the caller's transaction. */
export function markOutboxWrite(sql: Sql): void {
  marked.add(sql);
}

/** Called by a database adapter after `sql`'s transaction committed. */
export function outboxCommitted(sql: Sql): void {
  if (!marked.delete(sql)) return;
  for (const listener of listeners) listener();
}

/** Subscribes to commits of outbox rows in this process; returns the unsubscribe. */
export function onOutboxCommit(listener: () => void): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}
