import { z } from 'zod';
import type { OauthClient } from '../../store/oauth';

export const createClientBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    scopes: z.array(z.string().max(64)).min(1).max(64),
    workspace_id: z.string().min(1).max(128).nullish(),
    project_id: z.string().min(1).max(128).nullish(),
    ip_allowlist: z.array(z.string().max(64)).max(100).optional(),
  })
  .strict();

export const clientView = z.object({
  client_id: z.string(),
  tenant_id: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  workspace_id: z.string().nullable(),
  project_id: z.string().nullable(),
  ip_allowlist: z.array(z.string()),
  revoked_at: z.string().nullable(),
  created_at: z.string(),
});
export const createdClientView = clientView.extend({ client_secret: z.string() });
export const clientListView = z.object({ oauth_clients: z.array(clientView), count: z.number().int() });

/** RFC 6749 §4.4.2 token request (form-encoded or JSON) and §5.1 / §5.2 answers. */
export const tokenRequest = z.object({
  grant_type: z.literal('client_credentials'),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
  scope: z.string().optional(),
});
export const tokenView = z.object({ access_token: z.string(), token_type: z.literal('Bearer'), expires_in: z.number().int(), scope: z.string() });
export const oauthErrorView = z.object({ error: z.string(), error_description: z.string() });

export function presentClient(c: OauthClient): z.input<typeof clientView> {
  return {
    client_id: c.client_id,
    tenant_id: c.tenant_id,
    name: c.name,
    scopes: c.scopes,
    workspace_id: c.workspace_id,
    project_id: c.project_id,
    ip_allowlist: c.ip_allowlist,
    revoked_at: c.revoked_at,
    created_at: c.created_at,
  };
}

export function presentCreatedClient(c: OauthClient, secret: string): z.input<typeof createdClientView> {
  return { ...presentClient(c), client_secret: secret };
}

export function presentClientList(clients: OauthClient[]): z.input<typeof clientListView> {
  return { oauth_clients: clients.map(presentClient), count: clients.length };
}
