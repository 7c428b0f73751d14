import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ConfigError, parseConfig } from '../config/config';
import { SEALED_PREFIX, SealedValueError, SecretBox, envEncryptionKeys, generateEncryptionKey, parseEncryptionKeys, readEncryptionKeys, type EncryptionKey } from './secret-box';

const key = (id: string): EncryptionKey => ({ id, key: randomBytes(32) });
const ROW = ['gateway.webhook_subscriptions', 't-1', 'wh_1'];

function failure(fn: () => unknown): SealedValueError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SealedValueError) return err;
    throw err;
  }
  throw new Error('expected a SealedValueError');
}

describe('SecretBox', () => {
  it('round-trips a secret and never stores it readably', () => {
    const box = new SecretBox([key('k1')]);
    const secret = 'whsec_' + randomBytes(32).toString('base64');
    const sealed = box.seal(secret, ROW);
    expect(sealed.startsWith(`${SEALED_PREFIX}k1:`)).toBe(true);
    expect(sealed).not.toContain(secret);
    expect(sealed).not.toContain(secret.slice(6, 20));
    expect(box.open(sealed, ROW)).toBe(secret);
    expect(SecretBox.isSealed(sealed)).toBe(true);
    expect(SecretBox.isSealed(secret)).toBe(false);
    expect(SecretBox.keyIdOf(sealed)).toBe('k1');
    expect(box.sealedWithPrimary(sealed)).toBe(true);
  });

  it('uses a fresh IV every time (the same secret seals differently)', () => {
    const box = new SecretBox([key('k1')]);
    const a = box.seal('same', ROW);
    const b = box.seal('same', ROW);
    expect(a).not.toBe(b);
    expect(box.open(a, ROW)).toBe('same');
    expect(box.open(b, ROW)).toBe('same');
  });

  it('refuses a tampered value: any changed bit of IV, ciphertext or tag', () => {
    const box = new SecretBox([key('k1')]);
    const sealed = box.seal('whsec_something-secret', ROW);
    const body = Buffer.from(sealed.slice(`${SEALED_PREFIX}k1:`.length), 'base64url');
    for (const at of [0, 11, 12, body.length - 17, body.length - 1]) {
      const changed = Buffer.from(body);
      changed[at]! ^= 0x01;
      const err = failure(() => box.open(`${SEALED_PREFIX}k1:${changed.toString('base64url')}`, ROW));
      expect(err.reason).toBe('unauthentic');
    }
    expect(failure(() => box.open(`${SEALED_PREFIX}k1:${body.subarray(0, 20).toString('base64url')}`, ROW)).reason).toBe('malformed');
    expect(failure(() => box.open('whsec_plain', ROW)).reason).toBe('malformed');
    expect(failure(() => box.open(`${SEALED_PREFIX}k1:`, ROW)).reason).toBe('malformed');
  });

  it('refuses a value opened with another context (copied to another row or tenant)', () => {
    const box = new SecretBox([key('k1')]);
    const sealed = box.seal('whsec_row-one', ROW);
    expect(failure(() => box.open(sealed, ['gateway.webhook_subscriptions', 't-1', 'wh_2'])).reason).toBe('unauthentic');
    expect(failure(() => box.open(sealed, ['gateway.webhook_subscriptions', 't-2', 'wh_1'])).reason).toBe('unauthentic');
    expect(failure(() => box.open(sealed, ['other.purpose', 't-1', 'wh_1'])).reason).toBe('unauthentic');
    // Parts are encoded without ambiguity: moving a separator between parts is another context.
    const joined = box.seal('x', ['a:b', 'c']);
    expect(failure(() => box.open(joined, ['a', 'b:c'])).reason).toBe('unauthentic');
    expect(() => box.seal('x', [])).toThrow(/needs a context/);
  });

  it('refuses a value whose key id is not configured, and one relabelled with another configured id', () => {
    const old = key('old');
    const sealed = new SecretBox([old]).seal('whsec_x', ROW);
    const err = failure(() => new SecretBox([key('k2')]).open(sealed, ROW));
    expect(err.reason).toBe('unknown_key');
    expect(err.message).toContain('"old"');
    // A key with the same id but other bytes (a regenerated key) cannot open it either.
    expect(failure(() => new SecretBox([key('old')]).open(sealed, ROW)).reason).toBe('unauthentic');
    // Renaming the key id in the stored value breaks the authentication (the id is in the associated data).
    const both = new SecretBox([old, key('k2')]);
    expect(failure(() => both.open(sealed.replace(':old:', ':k2:'), ROW)).reason).toBe('unauthentic');
  });

  it('rotates: the first key seals, older keys still open', () => {
    const k1 = key('k1');
    const k2 = key('k2');
    const before = new SecretBox([k1]);
    const sealedByK1 = before.seal('whsec_before', ROW);
    const after = new SecretBox([k2, k1]);
    expect(after.primaryKeyId).toBe('k2');
    expect(after.open(sealedByK1, ROW)).toBe('whsec_before');
    expect(after.sealedWithPrimary(sealedByK1)).toBe(false);
    const sealedByK2 = after.seal('whsec_after', ROW);
    expect(SecretBox.keyIdOf(sealedByK2)).toBe('k2');
    expect(after.sealedWithPrimary(sealedByK2)).toBe(true);
    // Once k1 is retired, what it sealed no longer opens; what k2 sealed does.
    const retired = new SecretBox([k2]);
    expect(retired.open(sealedByK2, ROW)).toBe('whsec_after');
    expect(failure(() => retired.open(sealedByK1, ROW)).reason).toBe('unknown_key');
  });

  it('never puts the plaintext or the key into an error message', () => {
    const k = key('k1');
    const box = new SecretBox([k]);
    const sealed = box.seal('whsec_do-not-print', ROW);
    const err = failure(() => box.open(sealed, ['elsewhere']));
    expect(err.message).not.toContain('do-not-print');
    expect(err.message).not.toContain(k.key.toString('base64'));
    expect(err.message).not.toContain(sealed);
  });

  it('checks its key ring', () => {
    expect(() => new SecretBox([])).toThrow(/at least one key/);
    expect(() => new SecretBox([{ id: 'k1', key: randomBytes(16) }])).toThrow(/32 bytes, got 16/);
    expect(() => new SecretBox([key('k1'), key('k1')])).toThrow(/appears twice/);
    expect(() => new SecretBox([key('has:colon')])).toThrow(/id/);
  });
});

describe('encryption key ring notation', () => {
  it('reads id:base64 entries in order, in either base64 alphabet', () => {
    const a = randomBytes(32);
    const b = randomBytes(32);
    const keys = parseEncryptionKeys(` k2:${a.toString('base64')} , k1:${b.toString('base64url')}`);
    expect(keys.map((k) => k.id)).toEqual(['k2', 'k1']);
    expect(keys[0]!.key.equals(a)).toBe(true);
    expect(keys[1]!.key.equals(b)).toBe(true);
  });

  it('generates keys it can read back', () => {
    const spec = generateEncryptionKey('2025-06');
    expect(spec).toMatch(/^2025-06:[A-Za-z0-9+/]{43}=$/);
    expect(parseEncryptionKeys(spec)[0]!.id).toBe('2025-06');
  });

  it('reports every bad entry, by position and id, never by its material', () => {
    const short = randomBytes(16).toString('base64');
    const { problems } = readEncryptionKeys(`k1:${short},nocolon,bad id:${randomBytes(32).toString('base64')},k4:not*base64,k5:${randomBytes(32).toString('base64')},k5:${randomBytes(32).toString('base64')}`);
    expect(problems).toEqual([
      expect.stringMatching(/^key 1 \("k1"\) must be 32 bytes once base64-decoded, got 16/),
      'key 2 must be written id:base64-of-32-bytes',
      expect.stringMatching(/^key 3 has an invalid id/),
      'key 4 ("k4") is not base64',
      'key 6: id "k5" appears twice',
    ]);
    expect(problems.join('\n')).not.toContain(short);
    expect(readEncryptionKeys(' , ').problems).toEqual(['must list at least one key as id:base64-of-32-bytes']);
  });

  it('fits a config schema: required, every problem reported with the others', () => {
    const schema = z.object({ LORE_ENCRYPTION_KEYS: envEncryptionKeys(), PORT: z.string() });
    const ok = parseConfig(schema, { LORE_ENCRYPTION_KEYS: generateEncryptionKey('k1'), PORT: '1' });
    expect(ok.LORE_ENCRYPTION_KEYS[0]!.key).toHaveLength(32);

    const missing = (() => {
      try {
        parseConfig(schema, {});
      } catch (err) {
        return err as ConfigError;
      }
      throw new Error('expected a ConfigError');
    })();
    expect(missing.problems).toEqual(expect.arrayContaining(['LORE_ENCRYPTION_KEYS: is required (secrets have no default)', expect.stringMatching(/^PORT:/)]));

    const material = randomBytes(31).toString('base64');
    try {
      parseConfig(schema, { LORE_ENCRYPTION_KEYS: `k1:${material},k2:x`, PORT: '1' });
      throw new Error('expected a ConfigError');
    } catch (err) {
      const e = err as ConfigError;
      expect(e).toBeInstanceOf(ConfigError);
      expect(e.problems).toEqual([expect.stringMatching(/^LORE_ENCRYPTION_KEYS: key 1 \("k1"\) must be 32 bytes once base64-decoded, got 31/), expect.stringMatching(/^LORE_ENCRYPTION_KEYS: key 2 \("k2"\) must be 32 bytes/)]);
      expect(e.message).not.toContain(material);
    }
  });
});
