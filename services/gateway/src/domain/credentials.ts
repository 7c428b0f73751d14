import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import type { KeyType } from '@lore/contracts';

/** Key types a tenant can hold (declared in @lore/contracts with the admin API that takes them). */
export type { KeyType };

/** The prefix tells a reader (and a secret scanner) what a leaked string is. */

export const KEY_PREFIX: Record<KeyType, string> = {
  live: 'ck_live_',
  test: 'ck_test_',
  ephemeral: 'ck_eph_',
  memory: 'mk_',
};

/** Other secrets the gateway mints, with the same body-plus-checksum layout. */
export const OAUTH_TOKEN_PREFIX = 'oat_';
export const OAUTH_SECRET_PREFIX = 'ocs_';
export const REFRESH_TOKEN_PREFIX = 'rt_';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 40 base62 characters carry about 238 bits of randomness. */
export const SECRET_BODY_LENGTH = 40;
/** CRC32 in base62 needs six characters (62^6 > 2^32). */
export const CHECKSUM_LENGTH = 6;

/** Uniform base62 characters by rejection sampling: bytes >= 248 would bias the first eight symbols. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = randomBytes(Math.ceil((length - out.length) * 1.1) + 4);
    for (const b of bytes) {
      if (b >= 248) continue;
      out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

function base62Fixed(value: number, width: number): string {
  let v = value >>> 0;
  let out = '';
  for (let i = 0; i < width; i++) {
    out = ALPHABET[v % 62] + out;
    v = Math.floor(v / 62);
  }
  return out;
}

/** The checksum covers the prefix too, so a key pasted with the wrong prefix is caught offline. */
export function checksumOf(prefixAndBody: string): string {
  return base62Fixed(crc32(prefixAndBody), CHECKSUM_LENGTH);
}

/** A new secret: `<prefix><40 random base62><6 base62 CRC32 of prefix+body>`. */
export function mintSecret(prefix: string): string {
  const body = randomBase62(SECRET_BODY_LENGTH);
  return `${prefix}${body}${checksumOf(prefix + body)}`;
}

const BODY_RE = new RegExp(`^[0-9A-Za-z]{${SECRET_BODY_LENGTH + CHECKSUM_LENGTH}}$`);

/** True when `secret` has the given prefix, the right length and alphabet, and a matching checksum. */
export function hasValidChecksum(secret: string, prefix: string): boolean {
  if (!secret.startsWith(prefix)) return false;
  const rest = secret.slice(prefix.length);
  if (!BODY_RE.test(rest)) return false;
  const body = rest.slice(0, SECRET_BODY_LENGTH);
  return checksumOf(prefix + body) === rest.slice(SECRET_BODY_LENGTH);
}

/** The key prefixes in declaration order, listed once (parsing runs on every authenticated request). */
const KEY_PREFIXES = Object.entries(KEY_PREFIX) as Array<[KeyType, string]>;

export type ParsedCredential =
  | { kind: 'key'; type: KeyType; secret: string }
  | { kind: 'oauth'; secret: string };

/**
 * Recognises an API key or OAuth access token by prefix and checksum without touching any store, so mistyped
 * or invented strings are rejected before a lookup.
 */
export function parseCredential(raw: string): ParsedCredential | null {
  if (raw.length > 128) return null;
  for (const [type, prefix] of KEY_PREFIXES) {
    if (raw.startsWith(prefix)) return hasValidChecksum(raw, prefix) ? { kind: 'key', type, secret: raw } : null;
  }
  if (raw.startsWith(OAUTH_TOKEN_PREFIX)) return hasValidChecksum(raw, OAUTH_TOKEN_PREFIX) ? { kind: 'oauth', secret: raw } : null;
  return null;
}

/** SHA-256 hex: the only form in which a key, token or client secret is stored. */
export function sha256Hex(value: string): string {
  // The one-shot digest: a third of a Hash object's cost, and this runs on every authenticated request.
  return hash('sha256', value, 'hex');
}

/** Constant-time equality of two hex digests (lengths are public: both are SHA-256). */
export function digestsEqual(aHex: string, bHex: string): boolean {
  const a = Buffer.from(aHex, 'hex');
  const b = Buffer.from(bHex, 'hex');
  if (a.length !== b.length || a.length === 0) return false;
  return timingSafeEqual(a, b);
}

/** Constant-time comparison of two arbitrary strings (e.g. the admin token): hash both to equal length first. */
export function secretsEqual(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b) && presented.length === expected.length;
}

/** What may be shown of a key after creation: its prefix and the first four body characters. */
export function displayPrefix(secret: string, prefix: string): string {
  return secret.slice(0, prefix.length + 4);
}

/** Resource ids: a readable prefix and 20 base62 characters (~119 bits), unguessable across tenants. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(20)}`;
}

export function keyTypeOfPrefix(type: KeyType): 'ck_live' | 'ck_test' | 'ck_eph' | 'mk' {
  switch (type) {
    case 'live':
      return 'ck_live';
    case 'test':
      return 'ck_test';
    case 'ephemeral':
      return 'ck_eph';
    case 'memory':
      return 'mk';
  }
}
