import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateEncryptionKey } from '@lore/runtime';

/** `<data dir>/secrets.json`. */
export interface EmbeddedSecrets {
  identity_secret: string;
  session_secret: string;
  /**
   * Key ring (`LORE_ENCRYPTION_KEYS` notation, `id:base64`, first seals) for secrets the gateway stores and reads
   * back, i.e. webhook signing secrets.
   */
  encryption_keys: string;
  /**
   * Bearer token of the gateway's internal admin API on its loopback port (what `GATEWAY_ADMIN_TOKEN` is in a
   * cluster); copied into `dev-credentials.json` for the person and the admin CLI.
   */
  admin_token: string;
}

/**
 * Secrets of the embedded mode are generated on first start and kept in the data directory (mode 0600): the
 * process needs no configuration, and nothing secret is defaulted in code. A file written by a version that did not
 * have one of them yet (the encryption key ring and the admin token came later) gets the missing one added and keeps the others.
 * The file and the database belong together: without the file's key, the webhook secrets stored in the database
 * cannot be read back (rotating each webhook's secret replaces them).
 */
export async function loadSecrets(dataDir: string): Promise<EmbeddedSecrets> {
  const file = join(dataDir, 'secrets.json');
  const saved: Partial<EmbeddedSecrets> = existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as Partial<EmbeddedSecrets>) : {};
  const secrets: EmbeddedSecrets = {
    identity_secret: saved.identity_secret ?? randomBytes(32).toString('base64url'),
    session_secret: saved.session_secret ?? randomBytes(32).toString('base64url'),
    encryption_keys: saved.encryption_keys ?? generateEncryptionKey('k1'),
    admin_token: saved.admin_token ?? randomBytes(32).toString('base64url'),
  };
  const missing = (Object.keys(secrets) as Array<keyof EmbeddedSecrets>).some((k) => saved[k] === undefined);
  if (missing) {
    await writeFile(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
    // `mode` applies only when the file is created; an older file keeps its own otherwise.
    await chmod(file, 0o600);
  }
  return secrets;
}
