import { ConfigError, parseConfig } from '@lore/runtime';
import { embeddedEnvSchema, googleEndpoints } from './config';

describe('embedded configuration: LORE_WEBHOOKS_ALLOW_LOOPBACK', () => {
  it('is off by default and on when set outside production', () => {
    expect(parseConfig(embeddedEnvSchema, {}).LORE_WEBHOOKS_ALLOW_LOOPBACK).toBe(false);
    expect(parseConfig(embeddedEnvSchema, { LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true' }).LORE_WEBHOOKS_ALLOW_LOOPBACK).toBe(true);
    expect(parseConfig(embeddedEnvSchema, { NODE_ENV: 'development', LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true' }).LORE_WEBHOOKS_ALLOW_LOOPBACK).toBe(true);
  });

  it('is refused with a configuration error when NODE_ENV is production', () => {
    try {
      parseConfig(embeddedEnvSchema, { NODE_ENV: 'production', LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true' });
      throw new Error('expected a configuration error');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toEqual([expect.stringMatching(/^LORE_WEBHOOKS_ALLOW_LOOPBACK: .*refused when NODE_ENV=production/)]);
    }
    expect(parseConfig(embeddedEnvSchema, { NODE_ENV: 'production' }).LORE_WEBHOOKS_ALLOW_LOOPBACK).toBe(false);
  });

  it('takes only boolean words', () => {
    expect(() => parseConfig(embeddedEnvSchema, { LORE_WEBHOOKS_ALLOW_LOOPBACK: 'sure' })).toThrow(/LORE_WEBHOOKS_ALLOW_LOOPBACK/);
  });
});

describe('embedded configuration: LORE_WEBHOOKS_RETENTION_DAYS', () => {
  it('keeps settled deliveries 30 days unless set, 0 for ever, and refuses what is not a day count', () => {
    expect(parseConfig(embeddedEnvSchema, {}).LORE_WEBHOOKS_RETENTION_DAYS).toBe(30);
    expect(parseConfig(embeddedEnvSchema, { LORE_WEBHOOKS_RETENTION_DAYS: '7' }).LORE_WEBHOOKS_RETENTION_DAYS).toBe(7);
    expect(parseConfig(embeddedEnvSchema, { LORE_WEBHOOKS_RETENTION_DAYS: '0' }).LORE_WEBHOOKS_RETENTION_DAYS).toBe(0);
    expect(() => parseConfig(embeddedEnvSchema, { LORE_WEBHOOKS_RETENTION_DAYS: 'a week' })).toThrow(/LORE_WEBHOOKS_RETENTION_DAYS/);
  });
});

describe('embedded configuration: LORE_CONNECTORS_GOOGLE_API_URL and LORE_CONNECTORS_GOOGLE_TOKEN_URL', () => {
  it('points the Drive source at the endpoints set, as the core worker does, and at Google\'s without them', () => {
    const config = parseConfig(embeddedEnvSchema, { LORE_CONNECTORS_GOOGLE_API_URL: 'http://127.0.0.1:7001', LORE_CONNECTORS_GOOGLE_TOKEN_URL: 'http://127.0.0.1:7001/token' });
    expect(googleEndpoints(config)).toEqual({ apiBaseUrl: 'http://127.0.0.1:7001', tokenUrl: 'http://127.0.0.1:7001/token' });
    expect(googleEndpoints(parseConfig(embeddedEnvSchema, { LORE_CONNECTORS_GOOGLE_TOKEN_URL: '' }))).toEqual({});
  });

  it('takes only http(s) URLs', () => {
    expect(() => parseConfig(embeddedEnvSchema, { LORE_CONNECTORS_GOOGLE_API_URL: 'ftp://drive.example' })).toThrow(/LORE_CONNECTORS_GOOGLE_API_URL/);
  });
});
