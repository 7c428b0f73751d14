import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort, startProcess, stopProcess, until, type Started } from './processes';

/**
 * The README's "Try it" section, run as written against `npm start`: a second tenant made through the admin CLI
 * and the loopback admin API, isolation between the tenants (404), and the dev administrator signing in and listing
 * keys through the portal; then what that session opens (OAuth clients, the password routes) and the CLI's errors.
 * The only changes to the README's commands are the ones a test on a shared machine needs:
 * its own ports instead of 8080 and 9081, and its own data directory instead of ./.lore.
 */

const ROOT = join(__dirname, '..', '..');

interface Credentials {
  tenant_id: string;
  api_key: string;
  admin_email: string;
  admin_password: string;
  admin_token: string;
}

/** The first ```sh block under "## Try it" in README.md. */
function tryItBlock(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## Try it$/m)[1];
  if (!section) throw new Error('README.md has no "## Try it" section');
  const block = /```sh\n([\s\S]*?)```/.exec(section.split(/^## /m)[0]!);
  if (!block) throw new Error('the "Try it" section has no sh block');
  return block[1]!;
}

/** Replaces every occurrence, and fails if the README no longer says what the test replaces. */
function replaceAll(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`the README's block no longer mentions ${from}`);
  return text.split(from).join(to);
}

/** The environment of the person's second terminal: none of the harness's database or admin settings, then `extra`. */
function terminalEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['LORE_DATABASE_URL', 'LORE_DATABASE_OWNER_URL', 'LORE_ADMIN_URL', 'LORE_ADMIN_TOKEN']) delete env[name];
  return { ...env, ...extra };
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const cli = (args: string[], env: Record<string, string>) =>
  run(process.execPath, ['--conditions=lore-src', '--import', 'tsx', join(ROOT, 'services/gateway/src/cli.ts'), ...args], terminalEnv(env));

/** Whether anything accepts a TCP connection at host:port. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.setTimeout(3_000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('the README "Try it" section on npm start', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lore-try-it-'));
  let lore: Started;
  let url: string;
  let adminUrl: string;
  let adminPort: number;
  let creds: Credentials;

  beforeAll(async () => {
    adminPort = await freePort();
    lore = startProcess(process.execPath, [join(ROOT, 'scripts', 'start-embedded.mjs')], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', LORE_OPS_PORT: '0', LORE_ADMIN_PORT: String(adminPort), LORE_DATA_DIR: dataDir, LORE_LOG_LEVEL: 'warn', LORE_OCR: 'false' },
    });
    url = await until('the ready line', async () => /Lore is ready on (http:\/\/\S+)/.exec(lore.output())?.[1], 90_000, lore);
    adminUrl = await until('the admin API line', async () => /admin API: +(http:\/\/\S+)/.exec(lore.output())?.[1], 5_000, lore);
    creds = JSON.parse(readFileSync(join(dataDir, 'dev-credentials.json'), 'utf8')) as Credentials;
  }, 120_000);

  afterAll(async () => {
    if (lore) await stopProcess(lore);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves the admin API on 127.0.0.1 only, and only with its token', async () => {
    expect(adminUrl).toBe(`http://127.0.0.1:${adminPort}`);
    const anonymous = await fetch(`${adminUrl}/internal/v1/tenants`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"x"}' });
    expect(anonymous.status).toBe(401);
    const wrong = await fetch(`${adminUrl}/internal/v1/tenants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${creds.admin_token}x` },
      body: '{"name":"x"}',
    });
    expect(wrong.status).toBe(401);
    // The public port does not serve it.
    expect((await fetch(`${url}/internal/v1/tenants/dev/keys/x`, { headers: { authorization: `Bearer ${creds.admin_token}` } })).status).toBe(404);
    // Not reachable on the machine's other addresses (where the machine has one).
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal);
    expect(await accepts('127.0.0.1', adminPort)).toBe(true);
    if (external) expect(await accepts(external.address, adminPort)).toBe(false);
  });

  it('runs the README block as written: tenant B gets 404 on A\'s document, A\'s administrator lists A\'s keys', async () => {
    let script = tryItBlock();
    script = replaceAll(script, 'http://127.0.0.1:8080', url);
    script = replaceAll(script, 'http://127.0.0.1:9081', adminUrl);
    script = replaceAll(script, './.lore/dev-credentials.json', join(dataDir, 'dev-credentials.json'));
    // Test-only lines after the block, so the assertions below can use what it made.
    script += '\nprintf "\\nDOC=%s KEY_B=%s\\n" "$DOC" "$KEY_B"\n';
    const result = await run('bash', ['-euo', 'pipefail', '-c', script], terminalEnv());
    if (result.code !== 0) throw new Error(`the README block failed (${result.code}):\n${result.stdout}\n${result.stderr}`);

    const lines = result.stdout.split('\n');
    const made = /^DOC=(\S+) KEY_B=(\S+)$/.exec(lines.at(-2)!);
    expect(made).not.toBeNull();
    const [, doc, keyB] = made!;
    expect(doc).toMatch(/\S/);
    expect(keyB).toMatch(/^ck_live_/);
    // The two status lines: A reads its document, B is told it does not exist.
    expect(lines.slice(0, 2)).toEqual(['200', '404']);
    // The portal's key list of tenant A: the dev key, not tenant B's key.
    const listed = JSON.parse(lines.slice(2, -2).join('\n')) as { api_keys: Array<{ prefix: string; name: string }>; count: number };
    expect(listed.count).toBe(listed.api_keys.length);
    expect(listed.api_keys.some((k) => creds.api_key.startsWith(k.prefix) && k.name === 'embedded dev key')).toBe(true);
    expect(listed.api_keys.some((k) => keyB!.startsWith(k.prefix))).toBe(false);

    // Tenant B is a tenant of its own, and its key is no portal credential.
    const ping = await fetch(`${url}/api/v1/pages/ping`, { headers: { 'x-api-key': keyB! } });
    expect(ping.status).toBe(200);
    expect(((await ping.json()) as { tenant_id: string }).tenant_id).toBe('tenant-b');
    expect((await fetch(`${url}/api/v1/api-keys`, { headers: { 'x-api-key': keyB! } })).status).toBe(404);
    const searchB = await fetch(`${url}/api/v1/memory/documents`, { headers: { 'x-api-key': keyB! } });
    expect(searchB.status).toBe(200);
    expect(JSON.stringify(await searchB.json())).not.toContain(doc!);
  }, 180_000);

  it('the README\'s first curl command answers the ping with the dev key', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const command = /^curl .*\/api\/v1\/pages\/ping$/m.exec(readme.split(/^## Try it$/m)[0]!)?.[0];
    expect(command).toBeDefined();
    let script = replaceAll(command!, 'http://127.0.0.1:8080', url);
    script = replaceAll(script, './.lore/dev-credentials.json', join(dataDir, 'dev-credentials.json'));
    const result = await run('bash', ['-euo', 'pipefail', '-c', script], terminalEnv());
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'ok', tenant_id: creds.tenant_id, role: 'tenant_admin' });
  });

  it('the dev administrator\'s session manages OAuth clients and resets a member\'s password', async () => {
    const json = { 'content-type': 'application/json' };
    const login = async (email: string, password: string) => {
      const res = await fetch(`${url}/api/auth/login`, { method: 'POST', headers: json, body: JSON.stringify({ email, password }) });
      return { status: res.status, body: (await res.json()) as { token: string } };
    };
    const admin = await login(creds.admin_email, creds.admin_password);
    expect(admin.status).toBe(200);
    const session = { ...json, authorization: `Bearer ${admin.body.token}` };

    const client = await fetch(`${url}/api/v1/oauth-clients`, { method: 'POST', headers: session, body: JSON.stringify({ name: 'try-it', scopes: ['*:read'] }) });
    expect(client.status).toBe(201);
    const { client_id, client_secret } = (await client.json()) as { client_id: string; client_secret: string };
    const token = await fetch(`${url}/api/v1/oauth/token`, { method: 'POST', headers: json, body: JSON.stringify({ grant_type: 'client_credentials', client_id, client_secret }) });
    expect(token.status).toBe(200);
    const { access_token } = (await token.json()) as { access_token: string };
    const ping = await fetch(`${url}/api/v1/pages/ping`, { headers: { 'x-api-key': access_token } });
    expect(ping.status).toBe(200);
    expect(await ping.json()).toMatchObject({ tenant_id: creds.tenant_id, role: 'integration' });

    // A member made through the admin API; the administrator resets the password, the member signs in with it.
    const member = await fetch(`${adminUrl}/internal/v1/tenants/${creds.tenant_id}/users`, {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${creds.admin_token}` },
      body: JSON.stringify({ email: 'member@lore.localhost', password: 'a first password 123', role: 'member' }),
    });
    expect(member.status).toBe(201);
    const reset = await fetch(`${url}/api/password/reset_password`, { method: 'POST', headers: session, body: JSON.stringify({ user_email: 'member@lore.localhost' }) });
    expect(reset.status).toBe(200);
    const { new_password } = (await reset.json()) as { new_password: string };
    expect((await login('member@lore.localhost', 'a first password 123')).status).toBe(401);
    expect((await login('member@lore.localhost', new_password)).status).toBe(200);
  });

  it('admin CLI: an administrator through the admin API, and clear errors for a wrong token or setup', async () => {
    const env = { LORE_ADMIN_URL: adminUrl, LORE_ADMIN_TOKEN: creds.admin_token };
    const made = await cli(['create-tenant', '--name', 'Tenant C', '--tenant-id', 'tenant-c', '--key-type', 'test', '--admin-email', 'ops@tenant-c.example'], env);
    expect(made.code).toBe(0);
    const out = JSON.parse(made.stdout) as { tenant_id: string; tenant_created: boolean; key_id: string; api_key: string; admin: { email: string; password: string } };
    expect(out).toMatchObject({ tenant_id: 'tenant-c', tenant_created: true, admin: { email: 'ops@tenant-c.example' } });
    expect(out.api_key).toMatch(/^ck_test_/);
    const login = await fetch(`${url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: out.admin.email, password: out.admin.password }) });
    expect(login.status).toBe(200);
    expect(((await login.json()) as { user: { tenant_id: string; role: string } }).user).toMatchObject({ tenant_id: 'tenant-c', role: 'admin' });
    expect(made.stderr).toContain('The key and password above are shown once');

    // The same tenant id again: the tenant is reused, a second key is made.
    const again = await cli(['create-tenant', '--name', 'Tenant C', '--tenant-id', 'tenant-c'], env);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ tenant_id: 'tenant-c', tenant_created: false });
    // No administrator made, no password printed: the reminder names the key alone.
    expect(again.stderr).toContain('The key above is shown once');
    expect(again.stderr).not.toContain('password');

    const wrongToken = await cli(['create-tenant', '--name', 'X'], { ...env, LORE_ADMIN_TOKEN: 'not-the-token-0123456789abcdef' });
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toContain('the admin API answered 401');
    expect(wrongToken.stdout).toBe('');

    const both = await cli(['create-tenant', '--name', 'X'], { ...env, LORE_DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('choose one way');

    const noToken = await cli(['create-tenant', '--name', 'X', '--admin-url', adminUrl], {});
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('LORE_ADMIN_TOKEN');

    const badUrl = await cli(['create-tenant', '--name', 'X', '--admin-url', 'ftp://127.0.0.1/'], { LORE_ADMIN_TOKEN: creds.admin_token });
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toContain('http:// or https://');

    const nobody = await cli(['create-tenant', '--name', 'X', '--admin-url', `http://127.0.0.1:${await freePort()}`], { LORE_ADMIN_TOKEN: creds.admin_token });
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toContain('cannot reach the admin API');
  }, 180_000);
});
