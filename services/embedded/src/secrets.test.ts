import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, parseEncryptionKeys } from '@lore/runtime';
import { loadSecrets } from './secrets';

describe('embedded secrets.json', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'lore-embedded-secrets-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('generates every secret on first start, an encryption key ring among them, and reuses them after', async () => {
    const first = await loadSecrets(dir);
    const file = join(dir, 'secrets.json');
    expect(statSync(file).mode & 0o077).toBe(0);
    const keys = parseEncryptionKeys(first.encryption_keys);
    expect(keys).toHaveLength(1);
    expect(keys[0]!.key).toHaveLength(32);
    expect(first.admin_token.length).toBeGreaterThanOrEqual(40);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(first);
    expect(await loadSecrets(dir)).toEqual(first);
  });

  it('adds the key ring to a file written before it existed, keeping the other secrets', async () => {
    const file = join(dir, 'secrets.json');
    writeFileSync(file, JSON.stringify({ identity_secret: 'old-identity', session_secret: 'old-session' }), { mode: 0o644 });
    const loaded = await loadSecrets(dir);
    expect(loaded).toMatchObject({ identity_secret: 'old-identity', session_secret: 'old-session' });
    expect(parseEncryptionKeys(loaded.encryption_keys)).toHaveLength(1);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(loaded);
    expect(statSync(file).mode & 0o077).toBe(0);
    expect((await loadSecrets(dir)).encryption_keys).toBe(loaded.encryption_keys);
    // The admin API's token came later still: added the same way, then kept.
    expect(loaded.admin_token.length).toBeGreaterThanOrEqual(40);
    expect((await loadSecrets(dir)).admin_token).toBe(loaded.admin_token);
  });

  it('refuses an empty or broken file by name, and makes no new secrets in its place', async () => {
    const file = join(dir, 'secrets.json');
    for (const [text, why] of [['', /it is empty/], ['{"identity_secret": "x"', /not a JSON object of strings/], ['[1]', /not a JSON object of strings/]] as const) {
      writeFileSync(file, text);
      const err = await loadSecrets(dir).then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toEqual([expect.stringContaining(`${file} cannot be read`)]);
      expect((err as ConfigError).problems[0]).toMatch(why);
      expect(readFileSync(file, 'utf8')).toBe(text);
    }
  });
});
