import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { z } from 'zod';

/**
 * Encryption at rest for short secrets a service must be able to read back (a webhook signing secret, a
 * connector's token): AES-256-GCM with a random 12-byte IV per value.
 *
 * A sealed value describes itself: `enc:v1:<key id>:<base64url of iv | ciphertext | tag>`. The key id says which
 * key of the ring opens it, so keys can be rotated: the first key of the ring seals, every key opens. The caller
 * also passes a context (for example table, tenant and row id) that is authenticated with the ciphertext but not
 * stored in it: a value copied onto another row, or sealed for another purpose, does not open there.
 */

export const SEALED_PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;
const SEALED = /^enc:v1:([A-Za-z0-9_-]{1,32}):([A-Za-z0-9_-]+)$/;

/** One key of the ring: an id (letters, digits, `_`, `-`; at most 32) and 32 random bytes. */
export interface EncryptionKey {
  readonly id: string;
  readonly key: Buffer;
}

export type SealFailure = 'malformed' | 'unknown_key' | 'unauthentic';

/**
 * A value that could not be opened. `reason` tells a missing key (`unknown_key`: configuration) from a value that
 * was altered, copied to another row or sealed with another key of the same id (`unauthentic`). The message
 * never contains the value.
 */
export class SealedValueError extends Error {
  constructor(
    readonly reason: SealFailure,
    message: string,
  ) {
    super(message);
    this.name = 'SealedValueError';
  }
}

/** Seals and opens short secrets with a key ring (see the module comment). */
export class SecretBox {
  private readonly keys: ReadonlyMap<string, Buffer>;
  /** Id of the key that seals. */
  readonly primaryKeyId: string;

  constructor(keys: readonly EncryptionKey[]) {
    if (keys.length === 0) throw new Error('a SecretBox needs at least one key');
    const ring = new Map<string, Buffer>();
    for (const k of keys) {
      if (!KEY_ID.test(k.id)) throw new Error(`encryption key id "${k.id}" must be 1-32 letters, digits, "_" or "-"`);
      if (k.key.length !== KEY_BYTES) throw new Error(`encryption key "${k.id}" must be ${KEY_BYTES} bytes, got ${k.key.length}`);
      if (ring.has(k.id)) throw new Error(`encryption key id "${k.id}" appears twice`);
      ring.set(k.id, Buffer.from(k.key));
    }
    this.keys = ring;
    this.primaryKeyId = keys[0]!.id;
  }

  /** Whether `value` has the sealed form (it may still fail to open). */
  static isSealed(value: string): boolean {
    return value.startsWith(SEALED_PREFIX);
  }

  /** The id of the key a sealed value names, or null for anything else. */
  static keyIdOf(value: string): string | null {
    return SEALED.exec(value)?.[1] ?? null;
  }

  /** True when `value` is sealed with the key that seals today (nothing to re-seal after a key rotation). */
  sealedWithPrimary(value: string): boolean {
    return SecretBox.keyIdOf(value) === this.primaryKeyId;
  }

  /** Encrypts `plaintext` with the primary key, bound to `context`. */
  seal(plaintext: string, context: readonly string[]): string {
    const id = this.primaryKeyId;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(id)!, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(associatedData(id, context));
    const body = Buffer.concat([iv, cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${SEALED_PREFIX}${id}:${body.toString('base64url')}`;
  }

  /** Decrypts a value sealed by `seal` with the same context; throws `SealedValueError` otherwise. */
  open(sealed: string, context: readonly string[]): string {
    const m = SEALED.exec(sealed);
    if (!m) throw new SealedValueError('malformed', 'not a sealed value (expected enc:v1:<key id>:<data>)');
    const id = m[1]!;
    const key = this.keys.get(id);
    if (!key) throw new SealedValueError('unknown_key', `sealed with encryption key "${id}", which is not configured`);
    const body = Buffer.from(m[2]!, 'base64url');
    if (body.length < IV_BYTES + TAG_BYTES) throw new SealedValueError('malformed', 'sealed value is too short');
    const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(associatedData(id, context));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(body.subarray(IV_BYTES, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedValueError('unauthentic', `sealed value does not authenticate with key "${id}" (altered, moved to another row, or another key with that id)`);
    }
  }
}

/** The header (version and key id) and every context part, encoded without ambiguity. */
function associatedData(keyId: string, context: readonly string[]): Buffer {
  if (context.length === 0) throw new Error('a sealed value needs a context (what it belongs to)');
  return Buffer.from(JSON.stringify([`${SEALED_PREFIX}${keyId}`, ...context]), 'utf8');
}

/**
 * Reads a key ring written as `id:base64,id:base64,...` (the first key seals). Returns every problem found; the
 * messages name entries by position and id, never by their key material.
 */
export function readEncryptionKeys(spec: string): { keys: EncryptionKey[]; problems: string[] } {
  const keys: EncryptionKey[] = [];
  const problems: string[] = [];
  const entries = spec.split(',').map((s) => s.trim());
  if (entries.every((e) => e === '')) return { keys, problems: ['must list at least one key as id:base64-of-32-bytes'] };
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    if (entry === '') return;
    const where = `key ${i + 1}`;
    const colon = entry.indexOf(':');
    if (colon < 0) {
      problems.push(`${where} must be written id:base64-of-32-bytes`);
      return;
    }
    const id = entry.slice(0, colon);
    const material = entry.slice(colon + 1);
    if (!KEY_ID.test(id)) {
      problems.push(`${where} has an invalid id (1-32 letters, digits, "_" or "-")`);
      return;
    }
    if (seen.has(id)) problems.push(`${where}: id "${id}" appears twice`);
    seen.add(id);
    // Node's base64 decoder also reads the URL-safe alphabet, so either spelling of a key is accepted.
    const bytes = BASE64.test(material) ? Buffer.from(material, 'base64') : null;
    if (!bytes) {
      problems.push(`${where} ("${id}") is not base64`);
      return;
    }
    if (bytes.length !== KEY_BYTES) {
      problems.push(`${where} ("${id}") must be ${KEY_BYTES} bytes once base64-decoded, got ${bytes.length} (generate one with: openssl rand -base64 32)`);
      return;
    }
    keys.push({ id, key: bytes });
  });
  return { keys, problems };
}

/** Like `readEncryptionKeys`, but throws one error listing every problem. */
export function parseEncryptionKeys(spec: string): EncryptionKey[] {
  const { keys, problems } = readEncryptionKeys(spec);
  if (problems.length > 0) throw new Error(`invalid encryption keys: ${problems.join('; ')}`);
  return keys;
}

/** A fresh key in the ring's notation, `<id>:<base64 of 32 random bytes>`. */
export function generateEncryptionKey(id = 'k1'): string {
  if (!KEY_ID.test(id)) throw new Error(`encryption key id "${id}" must be 1-32 letters, digits, "_" or "-"`);
  return `${id}:${randomBytes(KEY_BYTES).toString('base64')}`;
}

/**
 * A key-ring variable for a config schema: a secret (required, never defaulted), parsed into keys; every bad
 * entry is its own problem, so the process reports them all at once.
 */
export const envEncryptionKeys = () =>
  z.string({ error: 'is required (secrets have no default)' }).transform((value, ctx) => {
    const { keys, problems } = readEncryptionKeys(value);
    for (const message of problems) ctx.addIssue({ code: 'custom', message });
    return problems.length > 0 ? z.NEVER : keys;
  });
