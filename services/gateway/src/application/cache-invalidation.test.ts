import { IdentitySigner, createLogger, createMetricsRegistry, generateEncryptionKey, parseEncryptionKeys, type Db } from '@lore/runtime';
import { buildContext, type CachedCredential, type GatewayContext } from '../context';
import { gatewayConfig } from '../config';
import { MemoryGatewayState } from '../state/memory-state';
import { credentialCacheKey, invalidateAllCredentials, invalidateCredential, invalidateHost, invalidateMemory, invalidateTenant, cachedMemory, observeSharedEpoch, revokeSubjects } from './cache-invalidation';

function context(): GatewayContext {
  return buildContext({
    // Nothing here reaches the database.
    db: {} as Db,
    state: new MemoryGatewayState(),
    logger: createLogger({ level: 'silent', service: 'cache-invalidation-test' }),
    metrics: createMetricsRegistry('cache-invalidation-test', { defaultMetrics: false }),
    signer: new IdentitySigner('unit-identity-secret-0123456789abcdef'),
    config: gatewayConfig({ sessions: { secret: 'unit-session-secret-0123456789abcdef' }, encryptionKeys: parseEncryptionKeys(generateEncryptionKey('unit')) }),
  });
}

const credential = {} as CachedCredential;
const rate = { perSecond: 1, burst: 1 };

describe('cache invalidation', () => {
  it('forgets one credential, keys and OAuth tokens with the same hash kept apart', () => {
    const ctx = context();
    ctx.caches.credentials.set(credentialCacheKey('key', 'h1'), credential);
    ctx.caches.credentials.set(credentialCacheKey('oauth', 'h1'), credential);
    ctx.caches.credentials.set(credentialCacheKey('key', 'h2'), credential);
    invalidateCredential(ctx, 'key', 'h1');
    expect(ctx.caches.credentials.get(credentialCacheKey('key', 'h1'))).toBeUndefined();
    expect(ctx.caches.credentials.get(credentialCacheKey('oauth', 'h1'))).toBe(credential);
    expect(ctx.caches.credentials.get(credentialCacheKey('key', 'h2'))).toBe(credential);
    invalidateAllCredentials(ctx);
    expect(ctx.caches.credentials.get(credentialCacheKey('oauth', 'h1'))).toBeUndefined();
  });

  it('forgets a tenant, a hostname (any case) and a memory, each alone', async () => {
    const ctx = context();
    ctx.caches.tenants.set('t1', null);
    ctx.caches.tenants.set('t2', null);
    ctx.caches.hosts.set('mem.example.test', null);
    const memory = { memory_id: 'm1', workspace_id: 'w1' };
    expect(await cachedMemory(ctx, 't1', 'm1', async () => memory)).toBe(memory);
    expect(await cachedMemory(ctx, 't1', 'm1', async () => null)).toBe(memory);
    invalidateTenant(ctx, 't1');
    invalidateHost(ctx, 'MEM.example.test');
    invalidateMemory(ctx, 't1', 'm1');
    expect(ctx.caches.tenants.get('t1')).toBeUndefined();
    expect(ctx.caches.tenants.get('t2')).toBeNull();
    expect(ctx.caches.hosts.get('mem.example.test')).toBeUndefined();
    expect(await cachedMemory(ctx, 't1', 'm1', async () => null)).toBeNull();
  });

  it('drops every credential and tenant when the shared epoch changes, not on the first sighting', () => {
    const ctx = context();
    ctx.caches.credentials.set('k:x', credential);
    ctx.caches.tenants.set('t', null);
    expect(observeSharedEpoch(ctx, 'e1')).toBe(false);
    expect(observeSharedEpoch(ctx, 'e1')).toBe(false);
    expect(ctx.caches.credentials.get('k:x')).toBe(credential);
    expect(observeSharedEpoch(ctx, 'e2')).toBe(true);
    expect(ctx.caches.credentials.get('k:x')).toBeUndefined();
    expect(ctx.caches.tenants.get('t')).toBeUndefined();
    expect(ctx.epoch.value).toBe('e2');
  });

  it('revokes subjects through the shared record every request reads', async () => {
    const ctx = context();
    expect((await ctx.state.admit({ subject: 'key_1', consume: false, rate, quota: null })).revoked).toBe(false);
    await revokeSubjects(ctx, ['key_1'], 0);
    expect((await ctx.state.admit({ subject: 'key_1', consume: false, rate, quota: null })).revoked).toBe(true);
    expect((await ctx.state.admit({ subject: 'key_2', consume: false, rate, quota: null })).revoked).toBe(false);
  });
});
