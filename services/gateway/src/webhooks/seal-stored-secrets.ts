import { resealStoredValues, type Db, type Logger, type ResealOptions, type ResealReport, type SealedRows, type SecretBox } from '@lore/runtime';
import { resealSigningSecret } from './secret-storage';
import { getSubscription, replaceStoredSecrets, subscriptionsToSeal } from './store/subscriptions';

/** Rows rewritten (plaintext sealed, or re-sealed with today's key) and stored values that did not open. */
export type SealingReport = ResealReport;

export type SealStoredSecretsOptions = ResealOptions;

/**
 * Brings every stored signing secret under today's key: seals the plaintext of rows written before encryption at
 * rest, re-seals values sealed with an older key of the ring (after which that key can be retired), and drops
 * replaced secrets whose overlap has ended (they no longer sign). The runtime's pass (`resealStoredValues`) finds
 * the rows across tenants by id only (`gateway.webhook_secrets_to_seal`), then each is locked, re-read and rewritten
 * inside its own tenant, so a concurrent rotation or a second gateway doing the same pass is harmless. A value that
 * does not open is left as it is and counted; nothing is ever overwritten with something that cannot be read back.
 */
export function sealStoredSecrets(db: Db, box: SecretBox, logger: Logger, options: SealStoredSecretsOptions = {}): Promise<SealingReport> {
  const rows: SealedRows<string> = {
    noun: { one: 'stored webhook secret', many: 'stored webhook secrets' },
    find: (sql, prefix, after, limit) => subscriptionsToSeal(sql, prefix, after, limit),
    async rewrite(sql, row, reseal) {
      const current = await getSubscription(sql, row.tenantId, row.id, { forUpdate: true });
      if (!current) return false;
      // Opens plaintext (rows written before encryption) as well as values sealed with an older key.
      const open = (stored: string) => resealSigningSecret(box, row.tenantId, row.id, stored);
      const fields = { subscription_id: row.id };
      const overlapEnded = current.previousSecretExpiresAt === null || current.previousSecretExpiresAt.getTime() <= Date.now();
      const secret = reseal(current.storedSecret, open, fields);
      const previous = current.storedPreviousSecret === null || overlapEnded ? null : reseal(current.storedPreviousSecret, open, fields);
      const changed = secret !== current.storedSecret || previous !== current.storedPreviousSecret;
      if (changed) await replaceStoredSecrets(sql, row.tenantId, row.id, { secret, previous });
      return changed;
    },
  };
  return resealStoredValues(db, box, logger, rows, options);
}
