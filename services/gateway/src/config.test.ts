import { ConfigError, generateEncryptionKey, parseConfig } from '@lore/runtime';
import { configFromEnv, gatewayEnvSchema } from './config';

const base = {
  LORE_DATABASE_URL: 'postgres://app@db/lore',
  LORE_REDIS_URL: 'redis://redis:6379',
  LORE_IDENTITY_SECRET: 'i'.repeat(32),
  GATEWAY_SESSION_SECRET: 's'.repeat(32),
  GATEWAY_ADMIN_TOKEN: 'a'.repeat(24),
  LORE_ENCRYPTION_KEYS: `k2:${Buffer.alloc(32, 2).toString('base64')},${generateEncryptionKey('k1')}`,
};

describe('gateway configuration', () => {
  it('builds a config with documented defaults', () => {
    const config = configFromEnv(parseConfig(gatewayEnvSchema, base));
    expect(config.rateLimit).toEqual({ perSecond: 100, burst: 200 });
    expect(config.sessions).toMatchObject({ ttlSeconds: 1_296_000, refreshTtlSeconds: 2_592_000, cookieSecure: true });
    expect(config.upstreams).toEqual({});
    expect(config.defaultPlan).toBe('unlimited');
    expect(config.adminToken).toBe(base.GATEWAY_ADMIN_TOKEN);
    // The key ring in order: the first key seals.
    expect(config.encryptionKeys.map((k) => k.id)).toEqual(['k2', 'k1']);
    expect(config.encryptionKeys[0]!.key.equals(Buffer.alloc(32, 2))).toBe(true);
  });

  it('reads upstreams as URLs or unix sockets and proxies as CIDRs', () => {
    const config = configFromEnv(
      parseConfig(gatewayEnvSchema, { ...base, GATEWAY_UPSTREAM_GRAPH: 'http://graph:8080', GATEWAY_UPSTREAM_MCP: 'unix:/run/mcp.sock', GATEWAY_TRUSTED_PROXIES: '10.0.0.0/8, fd00::/8' }),
    );
    expect(config.upstreams).toEqual({ graph: 'http://graph:8080', mcp: 'unix:/run/mcp.sock' });
    expect(config.trustedProxies).toEqual(['10.0.0.0/8', 'fd00::/8']);
  });

  it('reports every problem at once, and secrets have no defaults', () => {
    let caught: ConfigError | undefined;
    try {
      parseConfig(gatewayEnvSchema, { LORE_REDIS_URL: 'redis://x', GATEWAY_TRUSTED_PROXIES: 'nope', GATEWAY_UPSTREAM_CORE: 'ftp://x', GATEWAY_PORT: 'abc', GATEWAY_COOKIE_SECURE: 'maybe' });
    } catch (err) {
      caught = err as ConfigError;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const text = caught!.problems.join('\n');
    for (const name of ['LORE_DATABASE_URL', 'LORE_IDENTITY_SECRET', 'GATEWAY_SESSION_SECRET', 'GATEWAY_ADMIN_TOKEN', 'LORE_ENCRYPTION_KEYS', 'GATEWAY_TRUSTED_PROXIES', 'GATEWAY_UPSTREAM_CORE', 'GATEWAY_PORT', 'GATEWAY_COOKIE_SECURE']) {
      expect(text).toContain(name);
    }
  });

  it('refuses an encryption key that is not 32 bytes, naming the variable but not the key', () => {
    const material = Buffer.alloc(24, 7).toString('base64');
    try {
      parseConfig(gatewayEnvSchema, { ...base, LORE_ENCRYPTION_KEYS: `k1:${material}` });
      throw new Error('expected a ConfigError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toEqual([expect.stringMatching(/^LORE_ENCRYPTION_KEYS: key 1 \("k1"\) must be 32 bytes once base64-decoded, got 24/)]);
      expect((err as Error).message).not.toContain(material);
    }
  });

  it('refuses a default plan that is not in the plan table', () => {
    expect(() => parseConfig(gatewayEnvSchema, { ...base, GATEWAY_PLANS: '{"tiny":{"requests_per_month":10}}', GATEWAY_DEFAULT_PLAN: 'huge' })).toThrow(/GATEWAY_DEFAULT_PLAN/);
  });

  it('allows loopback webhook receivers only with LORE_WEBHOOKS_ALLOW_LOOPBACK, and refuses that setting in production', () => {
    expect(configFromEnv(parseConfig(gatewayEnvSchema, base)).webhooks).toEqual({ allowLoopback: false });
    expect(configFromEnv(parseConfig(gatewayEnvSchema, { ...base, LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true' })).webhooks).toEqual({ allowLoopback: true });
    expect(() => parseConfig(gatewayEnvSchema, { ...base, NODE_ENV: 'production', LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true' })).toThrow(
      /LORE_WEBHOOKS_ALLOW_LOOPBACK: .*refused when NODE_ENV=production/,
    );
    expect(configFromEnv(parseConfig(gatewayEnvSchema, { ...base, NODE_ENV: 'production' })).webhooks.allowLoopback).toBe(false);
  });
});
