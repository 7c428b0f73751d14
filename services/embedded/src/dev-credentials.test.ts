import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IdentitySigner, PgliteDb, createLogger, createMetricsRegistry, generateEncryptionKey, listen, parseEncryptionKeys, type StartedServer } from '@lore/runtime';
import { createGateway, gatewayConfig, MemoryGatewayState, type Gateway } from '@lore/gateway';
import { DEV_ADMIN_EMAIL, ensureDevCredentials, type DevCredentials } from './dev-credentials';
import { readyBanner } from './banner';

const ADMIN_TOKEN = 'unit-admin-token-0123456789abcdef0123';

/** The gateway embedded mode composes, on an in-memory PGlite, serving its public app on a loopback port. */
async function startGateway(): Promise<{ db: PgliteDb; gateway: Gateway; server: StartedServer; close(): Promise<void> }> {
  const db = await PgliteDb.open();
  const gateway = await createGateway({
    db,
    state: new MemoryGatewayState(),
    logger: createLogger({ level: 'silent', service: 'embedded-unit' }),
    metrics: createMetricsRegistry('embedded-unit', { defaultMetrics: false }),
    signer: new IdentitySigner('unit-identity-secret-0123456789abcdef'),
    config: gatewayConfig({ sessions: { secret: 'unit-session-secret-0123456789abcdef', cookieSecure: false }, adminToken: ADMIN_TOKEN, encryptionKeys: parseEncryptionKeys(generateEncryptionKey('unit')) }),
  });
  const server = await listen(gateway.publicApp, 0, '127.0.0.1');
  return {
    db,
    gateway,
    server,
    close: async () => {
      await server.close(100);
      await gateway.close();
      await db.close();
    },
  };
}

describe('embedded dev credentials', () => {
  const logger = createLogger({ level: 'silent', service: 'embedded-unit' });
  let dir: string;
  let gw: Awaited<ReturnType<typeof startGateway>>;

  beforeAll(async () => {
    gw = await startGateway();
  }, 60_000);
  afterAll(() => gw?.close());
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'lore-dev-credentials-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const file = () => join(dir, 'dev-credentials.json');
  const keyTenant = (server: StartedServer) => async (apiKey: string) => {
    const res = await fetch(`${server.url}/api/v1/pages/ping`, { headers: { 'x-api-key': apiKey } });
    const body = (await res.json()) as { tenant_id?: string };
    return res.status === 200 ? body.tenant_id! : null;
  };
  const ensure = (g = gw, adminToken = ADMIN_TOKEN) => ensureDevCredentials({ dataDir: dir, gateway: g.gateway.context, adminToken, keyTenant: keyTenant(g.server), logger });
  const login = (g: typeof gw, email: string, password: string) =>
    fetch(`${g.server.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });

  it('creates a key, a signed-in-capable administrator and the admin token on first start, in a file only its owner reads', async () => {
    const { credentials, fresh } = await ensure();
    expect([...fresh].sort()).toEqual(['admin_password', 'admin_token', 'api_key']);
    expect(credentials).toMatchObject({ tenant_id: 'dev', admin_email: DEV_ADMIN_EMAIL, admin_token: ADMIN_TOKEN });
    expect(credentials.api_key).toMatch(/^ck_test_/);
    expect(credentials.admin_password.length).toBeGreaterThanOrEqual(20);
    expect(JSON.parse(readFileSync(file(), 'utf8'))).toEqual(credentials);
    expect(statSync(file()).mode & 0o077).toBe(0);

    expect(await keyTenant(gw.server)(credentials.api_key)).toBe('dev');
    const signedIn = await login(gw, credentials.admin_email, credentials.admin_password);
    expect(signedIn.status).toBe(200);
    const session = (await signedIn.json()) as { token: string; user: { tenant_id: string; role: string } };
    expect(session.user).toMatchObject({ tenant_id: 'dev', role: 'admin' });
    // An administrator's session reaches the portal's key management.
    const keys = await fetch(`${gw.server.url}/api/v1/api-keys`, { headers: { authorization: `Bearer ${session.token}` } });
    expect(keys.status).toBe(200);
    expect(((await keys.json()) as { count: number }).count).toBeGreaterThanOrEqual(1);
  });

  it('keeps every credential on a second start, leaves the file untouched and has nothing new to show', async () => {
    const first = await ensure();
    const before = readFileSync(file(), 'utf8');
    const mtime = statSync(file()).mtimeMs;
    const second = await ensure();
    expect(second.credentials).toEqual(first.credentials);
    expect(second.fresh).toEqual([]);
    expect(readFileSync(file(), 'utf8')).toBe(before);
    expect(statSync(file()).mtimeMs).toBe(mtime);
    expect((await login(gw, second.credentials.admin_email, second.credentials.admin_password)).status).toBe(200);

    const banner = readyBanner({ url: 'http://127.0.0.1:8080', adminUrl: 'http://127.0.0.1:9081', credentialsFile: file(), credentials: second.credentials, fresh: second.fresh, embedder: 'hashed' });
    for (const secret of [second.credentials.api_key, second.credentials.admin_password, second.credentials.admin_token]) expect(banner).not.toContain(secret);
    expect(banner).toContain(file());
  });

  it('after a wiped database mints a new key and recreates the administrator with the saved password', async () => {
    const first = await ensure();
    const wiped = await startGateway();
    try {
      const again = await ensure(wiped);
      expect(again.fresh).toEqual(['api_key']);
      expect(again.credentials.api_key).not.toBe(first.credentials.api_key);
      expect(again.credentials.admin_password).toBe(first.credentials.admin_password);
      expect((await login(wiped, first.credentials.admin_email, first.credentials.admin_password)).status).toBe(200);
    } finally {
      await wiped.close();
    }
  }, 60_000);

  it('gives the administrator a new password when the file that held it is gone (the old one stops working)', async () => {
    const first = await ensure();
    rmSync(file());
    const again = await ensure();
    expect([...again.fresh].sort()).toEqual(['admin_password', 'admin_token', 'api_key']);
    expect(again.credentials.admin_password).not.toBe(first.credentials.admin_password);
    expect((await login(gw, first.credentials.admin_email, again.credentials.admin_password)).status).toBe(200);
    expect((await login(gw, first.credentials.admin_email, first.credentials.admin_password)).status).toBe(401);
  });

  it('follows a new admin token and rewrites a file that is not JSON', async () => {
    await ensure();
    const rotated = await ensure(gw, 'another-admin-token-0123456789abcdef');
    expect(rotated.fresh).toEqual(['admin_token']);
    expect((JSON.parse(readFileSync(file(), 'utf8')) as DevCredentials).admin_token).toBe('another-admin-token-0123456789abcdef');

    writeFileSync(file(), 'not json', { mode: 0o644 });
    const rewritten = await ensure();
    expect(rewritten.fresh).toContain('api_key');
    expect(JSON.parse(readFileSync(file(), 'utf8'))).toEqual(rewritten.credentials);
    expect(statSync(file()).mode & 0o077).toBe(0);
  });
});
