import type { SecretBox } from '@lore/runtime';

/**
 * How a credential's `credential_json` is kept in `core.credentials`: the same keys, each value (any JSON)
 * serialized and sealed with the runtime's SecretBox under the platform key ring (`LORE_ENCRYPTION_KEYS`), bound
 * to its tenant, credential and key. A database dump alone reveals no value, and a sealed value copied to another
 * key, credential or tenant does not open there. Keys are kept readable, so a read can show them redacted
 * without the key ring.
 */

/** What one sealed value is bound to. */
export function credentialValueContext(tenantId: string, credentialId: number, key: string): string[] {
  return ['core.credentials.credential_json', tenantId, String(credentialId), key];
}

export function sealCredentialJson(box: SecretBox, tenantId: string, credentialId: number, json: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(json).map(([k, v]) => [k, box.seal(JSON.stringify(v), credentialValueContext(tenantId, credentialId, k))]));
}

/**
 * The credential as given, for the indexing that uses it. Throws `SealedValueError` for a value that does not
 * open (a key missing from the ring, or a value altered or moved).
 */
export function openCredentialJson(box: SecretBox, tenantId: string, credentialId: number, stored: Record<string, string>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(stored).map(([k, v]) => [k, JSON.parse(box.open(v, credentialValueContext(tenantId, credentialId, k))) as unknown]));
}
