import { ConfigError, parseConfig } from '@lore/runtime';
import { mcpConfigSchema } from './config';

const SECRET = 'identity-secret-0123456789abcdef0123456789';
const REQUIRED = { AGENT_CORE_URL: 'http://lore-gateway.lore.svc:80', MEMORY_URL: 'http://lore-gateway.lore.svc:80', LORE_IDENTITY_SECRET: SECRET };

/** The problems parseConfig reports for `env`, in order (it must throw). */
function problems(env: Record<string, string | undefined>): string[] {
  try {
    parseConfig(mcpConfigSchema, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a configuration error');
}

describe('mcp configuration', () => {
  it("takes spec 3's defaults: MCP_HOST 127.0.0.1, MCP_PORT 8000, LOG_LEVEL info, no LOG_DIR (standard output)", () => {
    const config = parseConfig(mcpConfigSchema, REQUIRED);
    expect(config).toMatchObject({ ...REQUIRED, MCP_HOST: '127.0.0.1', MCP_PORT: 8000, LOG_LEVEL: 'info' });
    expect(config.LOG_DIR).toBeUndefined();
    expect(config).toMatchObject({
      LORE_MCP_BODY_LIMIT_BYTES: 1024 * 1024,
      LORE_MCP_MAX_SESSIONS_PER_KEY: 16,
      LORE_MCP_MAX_SESSIONS_PER_TENANT: 200,
      LORE_MCP_MAX_SESSIONS: 2_000,
      LORE_MCP_SESSION_IDLE_MS: 15 * 60_000,
      LORE_MCP_EVENT_STORE_MAX: 10_000,
      LORE_MCP_EVENT_STORE_BYTES: 64 * 1024 * 1024,
      LORE_MCP_EVENT_STORE_SESSION_BYTES: 16 * 1024 * 1024,
      LORE_MCP_UPSTREAM_TIMEOUT_MS: 30_000,
      LORE_MCP_UPSTREAM_MAX_BYTES: 8 * 1024 * 1024,
    });
  });

  it('treats an empty value as unset (a Kubernetes env entry with value "")', () => {
    const config = parseConfig(mcpConfigSchema, { ...REQUIRED, MCP_HOST: '', MCP_PORT: '', LOG_LEVEL: '', LOG_DIR: '' });
    expect(config).toMatchObject({ MCP_HOST: '127.0.0.1', MCP_PORT: 8000, LOG_LEVEL: 'info' });
    expect(config.LOG_DIR).toBeUndefined();
  });

  it('reads what the chart sets', () => {
    const config = parseConfig(mcpConfigSchema, {
      ...REQUIRED,
      MCP_HOST: '0.0.0.0',
      MCP_PORT: '8000',
      LOG_LEVEL: 'debug',
      LOG_DIR: '/var/log/lore',
      LORE_MCP_BODY_LIMIT_BYTES: '2097152',
      LORE_MCP_MAX_SESSIONS_PER_KEY: '4',
      LORE_MCP_SESSION_IDLE_MS: '60000',
      LORE_MCP_EVENT_STORE_MAX: '500',
    });
    expect(config).toMatchObject({
      MCP_HOST: '0.0.0.0',
      MCP_PORT: 8000,
      LOG_LEVEL: 'debug',
      LOG_DIR: '/var/log/lore',
      LORE_MCP_BODY_LIMIT_BYTES: 2_097_152,
      LORE_MCP_MAX_SESSIONS_PER_KEY: 4,
      LORE_MCP_SESSION_IDLE_MS: 60_000,
      LORE_MCP_EVENT_STORE_MAX: 500,
    });
  });

  it('reports every problem at once: a bad port, empty and missing URLs, an unknown level, a short secret, a limit out of range', () => {
    const found = problems({
      AGENT_CORE_URL: '',
      MEMORY_URL: 'lore-gateway:80',
      MCP_PORT: '70000',
      LOG_LEVEL: 'verbose',
      LORE_IDENTITY_SECRET: 'short',
      LORE_MCP_MAX_SESSIONS_PER_KEY: '0',
    });
    expect(found).toEqual([
      'AGENT_CORE_URL: AGENT_CORE_URL is required',
      'MEMORY_URL: must be an http(s) URL',
      'MCP_PORT: must be an integer between 0 and 65535, got "70000"',
      expect.stringMatching(/^LOG_LEVEL: /),
      'LORE_IDENTITY_SECRET: must be at least 32 characters',
      'LORE_MCP_MAX_SESSIONS_PER_KEY: must be an integer between 1 and 10000, got "0"',
    ]);
  });

  it('refuses a port that is no integer, and names every missing required variable', () => {
    expect(problems({ ...REQUIRED, MCP_PORT: '80a' })).toEqual(['MCP_PORT: must be an integer between 0 and 65535, got "80a"']);
    expect(problems({ ...REQUIRED, MCP_PORT: '-1' })).toEqual(['MCP_PORT: must be an integer between 0 and 65535, got "-1"']);
    expect(problems({})).toEqual([
      'AGENT_CORE_URL: AGENT_CORE_URL is required',
      'MEMORY_URL: MEMORY_URL is required',
      'LORE_IDENTITY_SECRET: is required (secrets have no default)',
    ]);
  });

  it('refuses a URL that is not http(s), with spaces, or with another scheme', () => {
    for (const url of ['ftp://gateway', 'http://', 'http://gate way', 'gateway.lore.svc']) {
      expect(problems({ ...REQUIRED, AGENT_CORE_URL: url })).toEqual(['AGENT_CORE_URL: must be an http(s) URL']);
    }
  });
});
