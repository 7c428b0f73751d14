import type { DevCredentials, DevSecret } from './dev-credentials';

export interface BannerInput {
  url: string;
  /** Null when the admin listener is off (`LORE_ADMIN_PORT=0`, or its port was taken). */
  adminUrl: string | null;
  credentialsFile: string;
  credentials: DevCredentials;
  /** The secrets this start made: only these are printed. */
  fresh: readonly DevSecret[];
  embedder: string;
}

/**
 * The lines `npm start` prints for the person at the terminal once Lore answers. A secret appears only on the start
 * that created it (it is theirs, and saved in their own data directory); later starts say where to find it, so a
 * terminal log or a screen share of a restart reveals nothing. Nothing here goes through the logger.
 */
export function readyBanner(input: BannerInput): string {
  const { credentials: c, fresh } = input;
  const file = input.credentialsFile;
  const show = (secret: DevSecret, value: string): string => (fresh.includes(secret) ? `${value}  (new; saved in ${file})` : `in ${file}`);
  const read = (field: keyof DevCredentials): string => `$(node -p 'require(${JSON.stringify(file)}).${field}')`;
  return (
    `\nLore is ready on ${input.url}\n` +
    `  tenant:     ${c.tenant_id}\n` +
    `  api key:    ${show('api_key', c.api_key)}\n` +
    `  sign in:    ${c.admin_email}, password ${show('admin_password', c.admin_password)}\n` +
    (input.adminUrl
      ? `  admin API:  ${input.adminUrl} (this machine only), token ${show('admin_token', c.admin_token)}\n`
      : `  admin API:  off\n`) +
    `  memory embedder: ${input.embedder}\n` +
    `  try:        curl -H "x-api-key: ${read('api_key')}" ${input.url}/api/v1/pages/ping\n\n`
  );
}
