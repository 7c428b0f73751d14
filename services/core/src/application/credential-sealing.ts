import { resealStoredValues, startInBackground, type BackgroundPass, type Db, type Logger, type ResealOptions, type ResealReport, type SealedRows, type SecretBox } from '@lore/runtime';
import { credentialsToSeal, getCredential, replaceSealedCredentialJson } from '../store/credentials';
import { credentialValueContext } from './credential-secrets';

/**
 * Brings every stored credential value under today's key after a key rotation (a new key put first in
 * `LORE_ENCRYPTION_KEYS`): each `credential_json` value sealed with an older key of the ring is opened and sealed
 * again with the first one, bound as before to its tenant, credential and key; after that the old key can be
 * retired. The runtime's pass (`resealStoredValues`) finds the credentials across tenants by id only
 * (`core.credentials_to_seal`, migration 0007), then each is locked, re-read and rewritten inside its own tenant, so
 * a credential deleted meanwhile or a second process doing the same pass is harmless. A value that does not open (a
 * key missing from the ring, a damaged or moved value) is left as it is and counted in `unreadable`.
 */
export function resealCredentials(db: Db, box: SecretBox, logger: Logger, options: ResealOptions = {}): Promise<ResealReport> {
  const rows: SealedRows<number> = {
    noun: { one: 'stored credential value', many: 'stored connector credentials' },
    find: (sql, prefix, after, limit) => credentialsToSeal(sql, prefix, after, limit),
    async rewrite(sql, row, reseal) {
      const current = await getCredential(sql, row.tenantId, row.id, 'update');
      if (!current) return false;
      let changed = false;
      const next: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(current.credential_json as Record<string, unknown>)) {
        const context = credentialValueContext(row.tenantId, row.id, key);
        // Every value is a sealed string; anything else does not open and is kept as it is.
        const stored = typeof value === 'string' ? value : JSON.stringify(value);
        const out = reseal(stored, (v) => box.seal(box.open(v, context), context), { credential_id: row.id, key });
        next[key] = out === stored ? value : out;
        if (out !== stored) changed = true;
      }
      if (changed) await replaceSealedCredentialJson(sql, row.tenantId, row.id, next);
      return changed;
    },
  };
  return resealStoredValues(db, box, logger, rows, options);
}

/**
 * Starts `resealCredentials` in the background (the core worker's and embedded mode's start); its report is logged
 * when it has gone through, a failure is logged and retried at the next start. `stop()` ends it (shutdown).
 */
export function startCredentialSealing(db: Db, box: SecretBox, logger: Logger): BackgroundPass<ResealReport> {
  return startInBackground(logger, 're-sealing stored connector credentials failed; the next start tries again', (signal) => resealCredentials(db, box, logger, { signal }));
}
