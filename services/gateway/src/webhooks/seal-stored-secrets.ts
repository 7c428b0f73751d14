import { SEALED_PREFIX, SealedValueError, type Db, type Logger, type SecretBox } from '@lore/runtime';
import { needsSealing, resealSigningSecret } from './secret-storage';
import { getSubscription, replaceStoredSecrets, subscriptionsToSeal } from './store/subscriptions';

export interface SealingReport {
  /** Rows rewritten: plaintext sealed, or re-sealed with today's key. */
  sealed: number;
  /** Stored values that did not open (a key missing from the ring, or a damaged value); left as they were. */
  unreadable: number;
}

export interface SealStoredSecretsOptions {
  batchSize?: number;
  /** Ends the pass between two rows (the gateway stopping). */
  signal?: AbortSignal;
}

/**
 * Brings every stored signing secret under today's key: seals the plaintext of rows written before encryption at
 * rest, re-seals values sealed with an older key of the ring (after which that key can be retired), and drops
 * replaced secrets whose overlap has ended (they no longer sign). Rows are found across tenants by id only
 * (`gateway.webhook_secrets_to_seal`), then each is locked, re-read and rewritten inside its own tenant, so a
 * concurrent rotation or a second gateway doing the same pass is harmless. A value that does not open is left as
 * it is and counted; nothing is ever overwritten with something that cannot be read back.
 */
export async function sealStoredSecrets(db: Db, box: SecretBox, logger: Logger, options: SealStoredSecretsOptions = {}): Promise<SealingReport> {
  const batchSize = options.batchSize ?? 200;
  const prefix = `${SEALED_PREFIX}${box.primaryKeyId}:`;
  const report: SealingReport = { sealed: 0, unreadable: 0 };
  let after: string | null = null;
  while (!options.signal?.aborted) {
    const batch = await subscriptionsToSeal(db, prefix, after, batchSize);
    for (const row of batch) {
      if (options.signal?.aborted) break;
      const outcome = await db.withTenant(row.tenantId, async (sql) => {
        const current = await getSubscription(sql, row.tenantId, row.id, { forUpdate: true });
        if (!current) return { changed: false, unreadable: 0 };
        let unreadable = 0;
        const reseal = (stored: string): string => {
          try {
            return resealSigningSecret(box, row.tenantId, row.id, stored);
          } catch (err) {
            if (!(err instanceof SealedValueError)) throw err;
            unreadable += 1;
            logger.warn({ tenant_id: row.tenantId, subscription_id: row.id, reason: err.reason }, 'stored webhook secret does not open; left as it is');
            return stored;
          }
        };
        const overlapEnded = current.previousSecretExpiresAt === null || current.previousSecretExpiresAt.getTime() <= Date.now();
        const secret = needsSealing(box, current.storedSecret) ? reseal(current.storedSecret) : current.storedSecret;
        const previous = current.storedPreviousSecret === null || overlapEnded ? null : needsSealing(box, current.storedPreviousSecret) ? reseal(current.storedPreviousSecret) : current.storedPreviousSecret;
        const changed = secret !== current.storedSecret || previous !== current.storedPreviousSecret;
        if (changed) await replaceStoredSecrets(sql, row.tenantId, row.id, { secret, previous });
        return { changed, unreadable };
      });
      if (outcome.changed) report.sealed += 1;
      report.unreadable += outcome.unreadable;
    }
    if (batch.length < batchSize) break;
    after = batch[batch.length - 1]!.id;
  }
  if (report.sealed > 0 || report.unreadable > 0) {
    const log = report.unreadable > 0 ? logger.warn.bind(logger) : logger.info.bind(logger);
    log({ sealed: report.sealed, unreadable: report.unreadable, key_id: box.primaryKeyId }, 'stored webhook secrets brought under the current encryption key');
  }
  return report;
}
