import { AppError, validate } from '@lore/runtime';
import type { GatewayContext } from '../../context';
import { requireSession } from '../../http/guards';
import { readJson, readJsonOrForm } from '../../http/body';
import type { GatewayRouter } from '../../http/state';
import { OauthError, createOauthClient, issueClientToken, listClients, revokeOauthClient } from '../../application/oauth';
import { createClientBody } from './schema';

function basicCredentials(header: string): { id: string; secret: string } | null {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) return null;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return { id: decodeURIComponent(decoded.slice(0, colon)), secret: decodeURIComponent(decoded.slice(colon + 1)) };
}

export function registerOauthRoutes(router: GatewayRouter, context: GatewayContext): void {
  const admin = requireSession(context, { admin: true });

  router.post('/api/v1/oauth-clients', admin, async (ctx) => {
    const user = ctx.state.user!;
    const body = validate(createClientBody, await readJson(ctx.req, context.config.bodyLimitBytes));
    const { client, secret } = await createOauthClient(context, user.tenant_id, body, `user:${user.user_id}`);
    ctx.status = 201;
    ctx.set('cache-control', 'no-store');
    ctx.body = { ...client, client_secret: secret };
  });

  router.get('/api/v1/oauth-clients', admin, async (ctx) => {
    const clients = await listClients(context.db, ctx.state.user!.tenant_id, 1000);
    ctx.body = { oauth_clients: clients, count: clients.length };
  });

  router.delete('/api/v1/oauth-clients/:client_id', admin, async (ctx) => {
    const client = await revokeOauthClient(context, ctx.state.user!.tenant_id, ctx.params.client_id!);
    if (!client) throw AppError.notFound('oauth client');
    ctx.body = client;
  });

  /**
   * RFC 6749 client-credentials grant. The client authenticates with HTTP Basic or `client_id` +
   * `client_secret` in the body (form-encoded or JSON); answers and errors use the RFC's shapes.
   */
  router.post('/api/v1/oauth/token', async (ctx) => {
    ctx.set('cache-control', 'no-store');
    ctx.set('pragma', 'no-cache');
    let body: Record<string, unknown>;
    try {
      body = await readJsonOrForm(ctx.req, 16 * 1024);
    } catch {
      ctx.status = 400;
      ctx.body = { error: 'invalid_request', error_description: 'the body must be form-encoded or JSON' };
      return;
    }
    const basic = basicCredentials(ctx.get('authorization'));
    const clientId = basic?.id ?? (typeof body.client_id === 'string' ? body.client_id : '');
    const clientSecret = basic?.secret ?? (typeof body.client_secret === 'string' ? body.client_secret : '');
    try {
      if (body.grant_type !== 'client_credentials') throw new OauthError(400, 'unsupported_grant_type', 'only grant_type=client_credentials is supported');
      if (!clientId || !clientSecret) throw new OauthError(401, 'invalid_client', 'client authentication failed');
      const limited = await context.state.hit(`oauth:${clientId.slice(0, 64)}`, context.config.loginRateLimit);
      if (!limited.allowed) {
        ctx.set('Retry-After', String(Math.max(1, Math.ceil(limited.retryAfterMs / 1000))));
        ctx.status = 429;
        ctx.body = { error: 'slow_down', error_description: 'too many token requests for this client' };
        return;
      }
      ctx.body = await issueClientToken(context, clientId, clientSecret, typeof body.scope === 'string' ? body.scope : undefined);
    } catch (err) {
      if (!(err instanceof OauthError)) throw err;
      ctx.status = err.status;
      if (err.status === 401) ctx.set('WWW-Authenticate', 'Basic realm="lore"');
      ctx.body = { error: err.error, error_description: err.description };
    }
  });
}
