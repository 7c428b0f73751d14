import { existsSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '@lore/runtime';
import { ensureDevAdmin, ensureDevTenant, type GatewayContext } from '@lore/gateway';

/** The dev tenant's administrator. `.localhost` is reserved (RFC 6761): the address can never be someone's. */
export const DEV_ADMIN_EMAIL = 'admin@lore.localhost';

/** `<data dir>/dev-credentials.json`: what the person at the terminal needs to try every surface (mode 0600). */
export interface DevCredentials {
  tenant_id: string;
  /** A `ck_test_` key of the dev tenant (`x-api-key`). */
  api_key: string;
  /** The dev tenant's administrator, for `POST /api/auth/login` and the portal routes. */
  admin_email: string;
  admin_password: string;
  /** Bearer token of the internal admin API on the loopback admin port (`LORE_ADMIN_PORT`). */
  admin_token: string;
}

/** The secrets in the file; each one is shown at the terminal only by the start that made it. */
export type DevSecret = 'api_key' | 'admin_password' | 'admin_token';

export interface DevCredentialsResult {
  credentials: DevCredentials;
  /** The secrets this start created or changed: the start banner prints these, and only these. */
  fresh: DevSecret[];
}

export interface DevCredentialsDeps {
  dataDir: string;
  gateway: GatewayContext;
  /** The admin API's token (from `secrets.json`). */
  adminToken: string;
  /** The tenant a key authenticates as through the public pipeline, or null when it does not. */
  keyTenant: (apiKey: string) => Promise<string | null>;
  logger: Logger;
}

/**
 * Makes `dev-credentials.json` true for this data directory, keeping whatever still holds:
 * - the saved key while it authenticates (else the dev tenant is ensured and a new key minted);
 * - the administrator's saved password (the account is created with it after a wiped database); an account whose
 *   password the file does not hold gets a new one;
 * - the admin token of `secrets.json`.
 * The file is rewritten only when something changed, so a second start changes and reveals nothing.
 */
export async function ensureDevCredentials(deps: DevCredentialsDeps): Promise<DevCredentialsResult> {
  const file = join(deps.dataDir, 'dev-credentials.json');
  const saved = await readSaved(file, deps.logger);
  const fresh: DevSecret[] = [];

  let tenantId = typeof saved.api_key === 'string' ? await deps.keyTenant(saved.api_key) : null;
  let apiKey = saved.api_key as string;
  if (!tenantId) {
    const dev = await ensureDevTenant(deps.gateway);
    tenantId = dev.tenant_id;
    apiKey = dev.api_key;
    fresh.push('api_key');
  }

  const email = typeof saved.admin_email === 'string' ? saved.admin_email : DEV_ADMIN_EMAIL;
  const knownPassword = typeof saved.admin_password === 'string' ? saved.admin_password : undefined;
  const admin = await ensureDevAdmin(deps.gateway, tenantId, { email, knownPassword });
  const password = admin.password ?? knownPassword!;
  if (password !== knownPassword) fresh.push('admin_password');
  if (saved.admin_token !== deps.adminToken) fresh.push('admin_token');

  const credentials: DevCredentials = { tenant_id: tenantId, api_key: apiKey, admin_email: admin.email, admin_password: password, admin_token: deps.adminToken };
  const changed = (Object.keys(credentials) as Array<keyof DevCredentials>).some((k) => saved[k] !== credentials[k]);
  if (changed) {
    await writeFile(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
    // `mode` applies only when the file is created; a file from an older start keeps its own otherwise.
    await chmod(file, 0o600);
  }
  return { credentials, fresh };
}

async function readSaved(file: string, logger: Logger): Promise<Partial<Record<keyof DevCredentials, unknown>>> {
  if (!existsSync(file)) return {};
  try {
    const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // Reported below; the content is never logged (it holds secrets).
  }
  logger.warn({ file }, 'dev-credentials.json is not a JSON object: writing new development credentials');
  return {};
}
