import { ConfigError, parseConfig } from '@lore/runtime';
import { embeddedEnvSchema } from './config';

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
