import { ConfigError, parseConfig } from '@lore/runtime';
import { coreConfigSchema } from './config';

/** The least environment core starts with. */
const required = {
  LORE_DATABASE_URL: 'postgres://lore@localhost/lore',
  LORE_IDENTITY_SECRET: 'x'.repeat(32),
  LORE_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
  LORE_CORE_GRAPH_URL: 'http://graph:8080',
};

describe('core configuration: LORE_CONNECTORS_GOOGLE_API_URL and LORE_CONNECTORS_GOOGLE_TOKEN_URL', () => {
  it('takes http(s) URLs and leaves them unset when empty or absent', () => {
    const config = parseConfig(coreConfigSchema, { ...required, LORE_CONNECTORS_GOOGLE_API_URL: 'https://drive.example', LORE_CONNECTORS_GOOGLE_TOKEN_URL: 'http://127.0.0.1:7001/token' });
    expect(config.LORE_CONNECTORS_GOOGLE_API_URL).toBe('https://drive.example');
    expect(config.LORE_CONNECTORS_GOOGLE_TOKEN_URL).toBe('http://127.0.0.1:7001/token');
    const unset = parseConfig(coreConfigSchema, { ...required, LORE_CONNECTORS_GOOGLE_API_URL: '' });
    expect(unset.LORE_CONNECTORS_GOOGLE_API_URL).toBeUndefined();
    expect(unset.LORE_CONNECTORS_GOOGLE_TOKEN_URL).toBeUndefined();
  });

  it('refuses at start a value that is not an http(s) URL, as embedded mode does', () => {
    try {
      parseConfig(coreConfigSchema, { ...required, LORE_CONNECTORS_GOOGLE_API_URL: 'drive.example', LORE_CONNECTORS_GOOGLE_TOKEN_URL: 'ftp://drive.example/token' });
      throw new Error('expected a configuration error');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toEqual([
        expect.stringMatching(/^LORE_CONNECTORS_GOOGLE_API_URL: must be an http\(s\) URL/),
        expect.stringMatching(/^LORE_CONNECTORS_GOOGLE_TOKEN_URL: must be an http\(s\) URL/),
      ]);
    }
  });
});
