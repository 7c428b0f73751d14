import { createHash } from 'node:crypto';
import { SecretBox, parseEncryptionKeys, type EncryptionKey } from '@lore/runtime';

/**
 * The key ring every test composition seals stored secrets with (webhook signing secrets), in the notation of
 * `LORE_ENCRYPTION_KEYS`. One fixed ring, so a gateway and a webhooks worker started by different helpers (or as
 * processes) always read each other's rows.
 */
export const TEST_ENCRYPTION_KEYS = `test-k1:${createHash('sha256').update('lore test encryption key 1').digest('base64')}`;

export function testEncryptionKeys(): EncryptionKey[] {
  return parseEncryptionKeys(TEST_ENCRYPTION_KEYS);
}

export function testSecretBox(): SecretBox {
  return new SecretBox(testEncryptionKeys());
}
