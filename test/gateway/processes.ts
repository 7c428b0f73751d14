import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { requireEnv, type TestDatabase } from '../support/infra';
import { ADMIN_TOKEN, ENCRYPTION_KEYS, IDENTITY_SECRET, SESSION_SECRET } from './harness';

const ROOT = join(__dirname, '..', '..');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface GatewayProcess {
  child: ChildProcess;
  publicUrl: string;
  adminUrl: string;
  opsUrl: string;
  stop(): Promise<void>;
}

/** A real gateway process (`src/main.ts` through tsx), configured only through its environment. */
export async function spawnGateway(database: TestDatabase, extraEnv: Record<string, string>): Promise<GatewayProcess> {
  const [port, adminPort, opsPort] = [await freePort(), await freePort(), await freePort()];
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    LOG_LEVEL: 'warn',
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_ADMIN_HOST: '127.0.0.1',
    GATEWAY_PORT: String(port),
    GATEWAY_ADMIN_PORT: String(adminPort),
    GATEWAY_OPS_PORT: String(opsPort),
    LORE_DATABASE_URL: database.url,
    LORE_DATABASE_OWNER_URL: database.ownerUrl,
    LORE_REDIS_URL: requireEnv('LORE_TEST_REDIS_URL'),
    LORE_IDENTITY_SECRET: IDENTITY_SECRET,
    GATEWAY_SESSION_SECRET: SESSION_SECRET,
    GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
    LORE_ENCRYPTION_KEYS: ENCRYPTION_KEYS,
    GATEWAY_COOKIE_SECURE: 'false',
    ...extraEnv,
  };
  const child = spawn(process.execPath, ['--conditions=lore-src', '--import', 'tsx', join(ROOT, 'services/gateway/src/main.ts')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const opsUrl = `http://127.0.0.1:${opsPort}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway process exited (${child.exitCode}): ${stderr}`);
    try {
      const r = await fetch(`${opsUrl}/readyz`);
      if (r.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`gateway process did not become ready: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    child,
    publicUrl: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    opsUrl,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(t);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
