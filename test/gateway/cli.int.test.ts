import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { http, startGateway, uid, type GatewayUnderTest } from './harness';

jest.setTimeout(120_000);

const ROOT = join(__dirname, '..', '..');

describe('gateway admin CLI', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest | undefined;

  beforeAll(async () => {
    database = await freshDatabase('lore_gwcli');
  });
  afterAll(async () => {
    await g?.close();
    await database?.drop();
  });

  it('creates a tenant and its first key in a deployment database; the key works on the gateway', async () => {
    const tenantId = `acme-${uid()}`;
    const run = spawnSync(
      process.execPath,
      ['--conditions=lore-src', '--import', 'tsx', join(ROOT, 'services/gateway/src/cli.ts'), 'create-tenant', '--name', 'Acme', '--tenant-id', tenantId, '--admin-email', `ops-${tenantId}@example.test`, '--migrate'],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LORE_DATABASE_URL: database.url, LORE_DATABASE_OWNER_URL: database.ownerUrl }, encoding: 'utf8', timeout: 90_000 },
    );
    expect(run.status).toBe(0);
    const out = JSON.parse(run.stdout) as { tenant_id: string; api_key: string; admin: { email: string; password: string } };
    expect(out.tenant_id).toBe(tenantId);
    expect(out.api_key).toMatch(/^ck_live_/);

    g = await startGateway(database, {}, { redisPrefix: `gwcli:${uid()}:`, migrate: false });
    const ping = await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: { 'x-api-key': out.api_key } });
    expect(ping.status).toBe(200);
    expect(ping.json.tenant_id).toBe(tenantId);
    const login = await http(g.publicUrl, 'POST', '/api/auth/login', { body: { email: out.admin.email, password: out.admin.password } });
    expect(login.status).toBe(200);

    const usage = spawnSync(process.execPath, ['--conditions=lore-src', '--import', 'tsx', join(ROOT, 'services/gateway/src/cli.ts')], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    expect(usage.status).toBe(2);
    expect(usage.stdout).toContain('create-tenant');
  });
});
