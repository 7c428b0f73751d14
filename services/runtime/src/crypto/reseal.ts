import type { Logger } from '../log/logger';
import type { Db, Sql } from '../ports/db';
import { SEALED_PREFIX, SealedValueError, type SecretBox } from './secret-box';

/**
 * The re-sealing pass a service runs over one table of sealed values after a key rotation (a new key put first in
 * the ring): every stored value not sealed with today's key is opened and sealed again with it, after which the old
 * key can be retired. The service says how its rows are found and rewritten (`SealedRows`); the pass does the rest
 * the same way everywhere:
 *
 * - rows are found across tenants by id only (a security-definer function of the service's schema that returns no
 *   value, keyset-paginated by id), since the application role sees one tenant at a time;
 * - each row is then locked, re-read and rewritten inside its own tenant (`Db.withTenant`), under the ordinary
 *   policy, so a concurrent change or a second process doing the same pass is harmless;
 * - a value that does not open (a key missing from the ring, a damaged or moved value) is left as it is, logged and
 *   counted: nothing is ever overwritten with something that cannot be read back.
 */

export interface ResealReport {
  /** Rows rewritten (some value sealed again with today's key). */
  sealed: number;
  /** Stored values that did not open; left as they were. */
  unreadable: number;
}

export interface ResealOptions {
  /** Rows asked for at a time (default 200). */
  batchSize?: number;
  /** Ends the pass between two rows (the process stopping). */
  signal?: AbortSignal;
}

/** One row to look at: its tenant and id, nothing of its values. */
export interface SealedRowRef<Id> {
  tenantId: string;
  id: Id;
}

/**
 * Brings one stored value under today's key: a value already sealed with it is returned as it is; otherwise
 * `reseal` (which opens it and seals it again, throwing `SealedValueError` when it does not open) is applied. A
 * value that does not open is returned as it is, counted, and logged with the row's tenant and `fields`.
 */
export type ResealValue = (stored: string, reseal: (stored: string) => string, fields?: Record<string, unknown>) => string;

export interface SealedRows<Id> {
  /** What the rows hold, for the logs: `{ one: 'stored webhook secret', many: 'stored webhook secrets' }`. */
  noun: { one: string; many: string };
  /**
   * Across tenants, in id order after `after` (null: from the first), at most `limit`: the rows holding a value
   * that does not start with `sealedPrefix` (`enc:v1:<primary key id>:`). Ids only.
   */
  find(db: Db, sealedPrefix: string, after: Id | null, limit: number): Promise<Array<SealedRowRef<Id>>>;
  /**
   * Inside the row's tenant transaction: locks and re-reads the row, passes each of its sealed values through
   * `reseal`, writes back what changed. True when the row was rewritten; false when nothing changed or it is gone.
   */
  rewrite(sql: Sql, row: SealedRowRef<Id>, reseal: ResealValue): Promise<boolean>;
}

/**
 * Runs the pass over every row `rows.find` lists (see the module comment) and reports what it did; the report is
 * logged when the pass has gone through (a warning when something did not open).
 */
export async function resealStoredValues<Id>(db: Db, box: SecretBox, logger: Logger, rows: SealedRows<Id>, options: ResealOptions = {}): Promise<ResealReport> {
  const batchSize = options.batchSize ?? 200;
  const prefix = `${SEALED_PREFIX}${box.primaryKeyId}:`;
  const report: ResealReport = { sealed: 0, unreadable: 0 };
  let after: Id | null = null;
  let done = false;
  while (!options.signal?.aborted) {
    const batch = await rows.find(db, prefix, after, batchSize);
    for (const row of batch) {
      if (options.signal?.aborted) break;
      let unreadable = 0;
      const changed = await db.withTenant(row.tenantId, (sql) => {
        unreadable = 0; // a transaction retried from the start counts again
        return rows.rewrite(sql, row, (stored, reseal, fields) => {
          if (box.sealedWithPrimary(stored)) return stored;
          try {
            return reseal(stored);
          } catch (err) {
            if (!(err instanceof SealedValueError)) throw err;
            unreadable += 1;
            logger.warn({ tenant_id: row.tenantId, ...fields, reason: err.reason }, `${rows.noun.one} does not open; left as it is`);
            return stored;
          }
        });
      });
      if (changed) report.sealed += 1;
      report.unreadable += unreadable;
    }
    if (batch.length < batchSize) {
      done = true;
      break;
    }
    after = batch[batch.length - 1]!.id;
  }
  if (done && !options.signal?.aborted) {
    const log = report.unreadable > 0 ? logger.warn.bind(logger) : logger.info.bind(logger);
    log({ sealed: report.sealed, unreadable: report.unreadable, key_id: box.primaryKeyId }, `${rows.noun.many} brought under the current encryption key`);
  }
  return report;
}

export interface BackgroundPass<T> {
  /** The pass's outcome; null when it failed (logged) or was stopped before it finished. */
  readonly done: Promise<T | null>;
  /** Ends the pass between two rows and waits for it. */
  stop(): Promise<void>;
}

/**
 * Starts `pass` in the background with a signal that `stop()` raises (a process's shutdown). A failure is logged as
 * `failure` and never thrown: the next start of the process tries again.
 */
export function startInBackground<T>(logger: Logger, failure: string, pass: (signal: AbortSignal) => Promise<T>): BackgroundPass<T> {
  const controller = new AbortController();
  const done = Promise.resolve()
    .then(() => pass(controller.signal))
    .then(
      (outcome) => (controller.signal.aborted ? null : outcome),
      (err: unknown) => {
        if (!controller.signal.aborted) logger.error({ err }, failure);
        return null;
      },
    );
  return {
    done,
    async stop() {
      controller.abort();
      await done;
    },
  };
}
