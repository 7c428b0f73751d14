import { CHECKSUM_LENGTH, KEY_PREFIX, SECRET_BODY_LENGTH, checksumOf, digestsEqual, hasValidChecksum, mintSecret, parseCredential, randomBase62, secretsEqual, sha256Hex } from './credentials';

describe('credential format', () => {
  it('mints keys as prefix + 40 random base62 + 6 checksum characters', () => {
    for (const prefix of Object.values(KEY_PREFIX)) {
      const key = mintSecret(prefix);
      expect(key.startsWith(prefix)).toBe(true);
      expect(key.length).toBe(prefix.length + SECRET_BODY_LENGTH + CHECKSUM_LENGTH);
      expect(key.slice(prefix.length)).toMatch(/^[0-9A-Za-z]+$/);
      expect(hasValidChecksum(key, prefix)).toBe(true);
    }
  });

  it('recognises the key type from the prefix', () => {
    expect(parseCredential(mintSecret('ck_live_'))).toMatchObject({ kind: 'key', type: 'live' });
    expect(parseCredential(mintSecret('ck_test_'))).toMatchObject({ kind: 'key', type: 'test' });
    expect(parseCredential(mintSecret('ck_eph_'))).toMatchObject({ kind: 'key', type: 'ephemeral' });
    expect(parseCredential(mintSecret('mk_'))).toMatchObject({ kind: 'key', type: 'memory' });
    expect(parseCredential(mintSecret('oat_'))).toMatchObject({ kind: 'oauth' });
  });

  it('rejects any single-character typo offline, through the checksum', () => {
    const key = mintSecret('ck_live_');
    let caught = 0;
    for (let i = 'ck_live_'.length; i < key.length; i++) {
      const swapped = key.slice(0, i) + (key[i] === 'Z' ? 'Y' : 'Z') + key.slice(i + 1);
      if (parseCredential(swapped) === null) caught++;
    }
    expect(caught).toBe(key.length - 'ck_live_'.length);
  });

  it('rejects a body pasted under another prefix, truncated keys and junk', () => {
    const key = mintSecret('ck_test_');
    expect(parseCredential(`ck_live_${key.slice('ck_test_'.length)}`)).toBeNull();
    expect(parseCredential(key.slice(0, -1))).toBeNull();
    expect(parseCredential('Bearer abc')).toBeNull();
    expect(parseCredential('x'.repeat(500))).toBeNull();
  });

  it('computes the checksum deterministically over prefix and body', () => {
    expect(checksumOf('ck_live_abc')).toBe(checksumOf('ck_live_abc'));
    expect(checksumOf('ck_live_abc')).not.toBe(checksumOf('ck_test_abc'));
    expect(checksumOf('x')).toHaveLength(CHECKSUM_LENGTH);
  });

  it('draws base62 characters without bias toward the first symbols', () => {
    const counts = new Map<string, number>();
    const sample = randomBase62(62 * 400);
    for (const c of sample) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    for (const n of counts.values()) {
      expect(n).toBeGreaterThan(250);
      expect(n).toBeLessThan(560);
    }
  });

  it('stores only SHA-256 and compares digests and secrets in constant time', () => {
    const h = sha256Hex('ck_live_secret');
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(digestsEqual(h, sha256Hex('ck_live_secret'))).toBe(true);
    expect(digestsEqual(h, sha256Hex('ck_live_other'))).toBe(false);
    expect(digestsEqual(h, '')).toBe(false);
    expect(secretsEqual('admin-token', 'admin-token')).toBe(true);
    expect(secretsEqual('admin-token', 'admin-tokens')).toBe(false);
  });
});
