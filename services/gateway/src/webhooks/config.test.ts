import { ConfigError, generateEncryptionKey, parseConfig } from '@lore/runtime';
import { webhooksEnvSchema, workerConfigFromEnv } from './config';

const base = { LORE_DATABASE_URL: 'postgres://app@db/lore', LORE_KAFKA_BROKERS: 'k1:9092, k2:9092', LORE_ENCRYPTION_KEYS: generateEncryptionKey('k1') };

describe('webhooks worker configuration', () => {
  it('has production defaults: 5 s timeout, no loopback, no extra CA, earliest start', () => {
    const config = workerConfigFromEnv(parseConfig(webhooksEnvSchema, base));
    expect(config).toMatchObject({ deliveryTimeoutMs: 5000, allowLoopback: false, startFrom: 'earliest', groupIdPrefix: 'lore.webhooks' });
    expect(config.extraCaPem).toBeUndefined();
    expect(parseConfig(webhooksEnvSchema, base).LORE_KAFKA_BROKERS).toEqual(['k1:9092', 'k2:9092']);
  });

  it('refuses the loopback and test CA settings when NODE_ENV is production, reporting both at once', () => {
    const env = { ...base, NODE_ENV: 'production', LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true', WEBHOOKS_TEST_CA_FILE: '/tmp/ca.pem' };
    try {
      parseConfig(webhooksEnvSchema, env);
      throw new Error('expected a configuration error');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const problems = (err as ConfigError).problems.join('\n');
      expect(problems).toMatch(/LORE_WEBHOOKS_ALLOW_LOOPBACK: .*refused when NODE_ENV=production/);
      expect(problems).toMatch(/WEBHOOKS_TEST_CA_FILE/);
    }
  });

  it('accepts the loopback and test CA settings outside production and reads the CA file', () => {
    const env = parseConfig(webhooksEnvSchema, { ...base, NODE_ENV: 'test', LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true', WEBHOOKS_TEST_CA_FILE: '/ca.pem' });
    const config = workerConfigFromEnv(env, (p) => `PEM from ${p}`);
    expect(config).toMatchObject({ allowLoopback: true, extraCaPem: 'PEM from /ca.pem' });
  });

  it('keeps settled deliveries 30 days unless LORE_WEBHOOKS_RETENTION_DAYS says otherwise (0: for ever)', () => {
    expect(workerConfigFromEnv(parseConfig(webhooksEnvSchema, base)).retentionDays).toBe(30);
    expect(workerConfigFromEnv(parseConfig(webhooksEnvSchema, { ...base, LORE_WEBHOOKS_RETENTION_DAYS: '0' })).retentionDays).toBe(0);
    expect(workerConfigFromEnv(parseConfig(webhooksEnvSchema, { ...base, LORE_WEBHOOKS_RETENTION_DAYS: '7' })).retentionDays).toBe(7);
    expect(() => parseConfig(webhooksEnvSchema, { ...base, LORE_WEBHOOKS_RETENTION_DAYS: '-1' })).toThrow(/LORE_WEBHOOKS_RETENTION_DAYS/);
  });

  it('in production without the loopback setting starts with loopback refused', () => {
    const config = workerConfigFromEnv(parseConfig(webhooksEnvSchema, { ...base, NODE_ENV: 'production', LORE_WEBHOOKS_ALLOW_LOOPBACK: 'false' }));
    expect(config.allowLoopback).toBe(false);
  });

  it('rejects a delivery timeout outside a few seconds and missing required values', () => {
    expect(() => parseConfig(webhooksEnvSchema, { ...base, WEBHOOKS_DELIVERY_TIMEOUT_MS: '120000' })).toThrow(ConfigError);
    expect(() => parseConfig(webhooksEnvSchema, {})).toThrow(/LORE_DATABASE_URL[\s\S]*LORE_KAFKA_BROKERS|LORE_KAFKA_BROKERS[\s\S]*LORE_DATABASE_URL/);
  });

  it('keeps a killed worker in its groups for 30 s unless told otherwise, within what a broker accepts', () => {
    expect(parseConfig(webhooksEnvSchema, base).WEBHOOKS_KAFKA_SESSION_TIMEOUT_MS).toBe(30_000);
    expect(parseConfig(webhooksEnvSchema, { ...base, WEBHOOKS_KAFKA_SESSION_TIMEOUT_MS: '9000' }).WEBHOOKS_KAFKA_SESSION_TIMEOUT_MS).toBe(9_000);
    expect(() => parseConfig(webhooksEnvSchema, { ...base, WEBHOOKS_KAFKA_SESSION_TIMEOUT_MS: '1000' })).toThrow(/WEBHOOKS_KAFKA_SESSION_TIMEOUT_MS/);
  });

  it('needs the encryption key ring: required, and a key of the wrong length is refused with the other problems', () => {
    expect(parseConfig(webhooksEnvSchema, base).LORE_ENCRYPTION_KEYS.map((k) => k.id)).toEqual(['k1']);
    const { LORE_ENCRYPTION_KEYS: _omitted, ...withoutKeys } = base;
    expect(() => parseConfig(webhooksEnvSchema, withoutKeys)).toThrow(/LORE_ENCRYPTION_KEYS: is required \(secrets have no default\)/);
    try {
      parseConfig(webhooksEnvSchema, { ...base, LORE_ENCRYPTION_KEYS: 'k1:c2hvcnQ=', WEBHOOKS_DELIVERY_TIMEOUT_MS: '1' });
      throw new Error('expected a configuration error');
    } catch (err) {
      const problems = (err as ConfigError).problems.join('\n');
      expect(problems).toMatch(/LORE_ENCRYPTION_KEYS: key 1 \("k1"\) must be 32 bytes once base64-decoded, got 5/);
      expect(problems).toMatch(/WEBHOOKS_DELIVERY_TIMEOUT_MS/);
      expect(problems).not.toContain('c2hvcnQ=');
    }
  });
});
