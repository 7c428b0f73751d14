import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, generateEncryptionKey } from '@lore/runtime';

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
  const saved: Partial<EmbeddedSecrets> = existsSync(file) ? readSaved(file, await readFile(file, 'utf8')) : {};
  const secrets: EmbeddedSecrets = {
    identity_secret: saved.identity_secret ?? randomBytes(32).toString('base64url'),
    session_secret: saved.session_secret ?? randomBytes(32).toString('base64url'),
    encryption_keys: saved.encryption_keys ?? generateEncryptionKey('k1'),
    admin_token: saved.admin_token ?? randomBytes(32).toString('base64url'),
  };
  const missing = (Object.keys(secrets) as Array<keyof EmbeddedSecrets>).some((k) => saved[k] === undefined);
  if (missing) {
    // Written beside it and renamed over it: a stop in the middle leaves the old file or the new one, never a cut one.
    const next = `${file}.${process.pid}.tmp`;
    await writeFile(next, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
    // `mode` applies only when the file is created; a leftover keeps its own otherwise.
    await chmod(next, 0o600);
    await rename(next, file);
  }
  return secrets;
}

/**
 * The saved secrets, or a refusal naming the file: new secrets in its place would leave the database's sealed
 * webhook secrets unreadable and end every session, so that is the person's decision, not the process's.
 */
function readSaved(file: string, text: string): Partial<EmbeddedSecrets> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    parsed = err;
  }
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && !(parsed instanceof Error)) {
    const fields = Object.entries(parsed as Record<string, unknown>);
    if (fields.every(([, v]) => typeof v === 'string')) return parsed as Partial<EmbeddedSecrets>;
  }
  throw new ConfigError([
    `${file} cannot be read (${text.trim() === '' ? 'it is empty' : 'it is not a JSON object of strings'}): restore it from a copy. If it is lost, delete it and Lore makes new secrets on the next start: sessions end, and every webhook's signing secret must be rotated (the old key cannot open them).`,
  ]);
}
