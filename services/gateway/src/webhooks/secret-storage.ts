import { SealedValueError, SecretBox } from '@lore/runtime';
import { isSigningSecret } from './signing';

/**
 * How signing secrets are kept in `gateway.webhook_subscriptions` (`secret`, `previous_secret`): sealed with the
 * runtime's SecretBox under the configured key ring, bound to their tenant and subscription. The worker must sign
 * with them, so they are encrypted rather than hashed; a database dump alone reveals none of them.
 *
 * Rows written before encryption hold the plaintext (`whsec_...`). They are still read (a delivery never fails
 * because of the upgrade), sealed by the gateway's start-up pass (seal-stored-secrets.ts) and on the next rotation.
 */

/**
 * What a stored secret is bound to. Both columns of a row share it, so the rotation may move the current secret
 * to `previous_secret` as it is; a value moved to another row, tenant or table does not open.
 */
export function signingSecretContext(tenantId: string, subscriptionId: string): string[] {
  return ['gateway.webhook_subscriptions.secret', tenantId, subscriptionId];
}

export function sealSigningSecret(box: SecretBox, tenantId: string, subscriptionId: string, secret: string): string {
  return box.seal(secret, signingSecretContext(tenantId, subscriptionId));
}

/** The secret to sign with. Throws `SealedValueError` for a value that does not open (or is not a secret at all). */
export function openSigningSecret(box: SecretBox, tenantId: string, subscriptionId: string, stored: string): string {
  if (SecretBox.isSealed(stored)) return box.open(stored, signingSecretContext(tenantId, subscriptionId));
  if (isSigningSecret(stored)) return stored; // written before encryption at rest
  throw new SealedValueError('malformed', 'stored signing secret is neither sealed nor a signing secret');
}

/** True for a stored value that is plaintext or sealed with a key other than the one that seals today. */
export function needsSealing(box: SecretBox, stored: string | null): boolean {
  return stored !== null && !box.sealedWithPrimary(stored);
}

/** Opens a stored value and seals it again with today's key (a value already current is returned as it is). */
export function resealSigningSecret(box: SecretBox, tenantId: string, subscriptionId: string, stored: string): string {
  if (!needsSealing(box, stored)) return stored;
  return sealSigningSecret(box, tenantId, subscriptionId, openSigningSecret(box, tenantId, subscriptionId, stored));
}
