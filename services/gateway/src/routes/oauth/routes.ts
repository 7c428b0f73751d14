import { AppError } from '@lore/runtime';
import { z } from 'zod';
import { OauthError } from '../../application/oauth';
import type { OauthClient } from '../../store/oauth';
import { NONE, SESSION, err, route, type SessionGuard } from '../../http/route';
import { clientListView, clientView, createClientBody, createdClientView, oauthErrorView, presentClient, presentClientList, presentCreatedClient, tokenRequest, tokenView } from './schema';

export interface OauthRouteDeps {
  session: SessionGuard;
  clients: {
    create(tenantId: string, input: z.output<typeof createClientBody>, createdBy: string): Promise<{ client: OauthClient; secret: string }>;
    list(tenantId: string, limit: number): Promise<OauthClient[]>;
    /** Revokes the client and every token it was issued; null when the tenant has no such client. */
    revoke(tenantId: string, clientId: string): Promise<OauthClient | null>;
  };
  tokens: {
    /** Throws OauthError (RFC 6749 §5.2) when the client, its secret or the scope is refused, or it asks too often. */
    issue(clientId: string, clientSecret: string, scope: string | undefined): Promise<z.input<typeof tokenView>>;
  };
}

const LIST_LIMIT = 1000;
/** A token request is a few short fields; anyone may send one, so the limit is small. */
const TOKEN_BODY_LIMIT = 16 * 1024;

/** The challenge of a refused client authentication: HTTP Basic is the one method of the header (RFC 6749 §5.2). */
const BASIC_CHALLENGE = { 'WWW-Authenticate': 'Basic realm="lore"' };

/**
 * The client credentials of the token request's Authorization header (RFC 6749 §2.3.1: form-encoded id and secret,
 * base64 in HTTP Basic); null without the header. A header that cannot be read — Basic with no colon, bad base64 or
 * %-encoding, or another scheme (Bearer) — is 401 `invalid_client` with the Basic challenge: the client tried to
 * authenticate with it, so the body's credentials are not tried instead (before 2026-11-30 they were).
 */
function basicCredentials(header: string): { id: string; secret: string } | null {
  if (header.trim() === '') return null;
  const unreadable = (why: string) => rfcError(401, 'invalid_client', `the Authorization header ${why}: send Basic base64(client_id:client_secret)`, BASIC_CHALLENGE);
  const [scheme = '', token = ''] = header.trim().split(/\s+(.*)/s);
  if (scheme.toLowerCase() !== 'basic') throw unreadable('uses a scheme the token endpoint does not take');
  const bytes = Buffer.from(token, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(token) || bytes.toString('base64').replace(/=+$/, '') !== token.replace(/=+$/, '')) throw unreadable('is not valid base64');
  let decoded: string;
  try {
    decoded = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw unreadable('is not valid UTF-8');
  }
  const colon = decoded.indexOf(':');
  if (colon < 0) throw unreadable('holds no colon between the client id and secret');
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon)), secret: decodeURIComponent(decoded.slice(colon + 1)) };
  } catch {
    throw unreadable('holds a malformed %-encoding');
  }
}

/** An RFC 6749 §5.2 error: `{ error, error_description }` with the RFC's status. */
function rfcError(status: 400 | 401 | 429, error: string, description: string, headers: Record<string, string> = {}): AppError {
  const code = status === 400 ? 'BAD_REQUEST' : status === 401 ? 'UNAUTHORIZED' : 'RATE_LIMITED';
  return new AppError(code, description, { headers, body: { error, error_description: description } });
}

export function oauthRoutes(deps: OauthRouteDeps) {
  const admin = deps.session({ admin: true });
  return [
    route({
      method: 'post', path: '/api/v1/oauth-clients', operationId: 'createOauthClient', summary: 'Create an OAuth client (its secret is shown only here)',
      security: SESSION, guards: [admin],
      body: createClientBody,
      ok: { status: 201, description: '`client_secret` is shown only here', schema: createdClientView },
      responses: { 409: err('the tenant has 100 OAuth clients not revoked, the most it may have') },
      handler: async (ctx, { body }) => {
        const user = ctx.state.user!;
        const { client, secret } = await deps.clients.create(user.tenant_id, body, `user:${user.user_id}`);
        ctx.set('cache-control', 'no-store');
        return presentCreatedClient(client, secret);
      },
    }),
    route({
      method: 'get', path: '/api/v1/oauth-clients', operationId: 'listOauthClients', summary: 'The tenant\'s OAuth clients',
      security: SESSION, guards: [admin],
      ok: { status: 200, description: 'OAuth clients', schema: clientListView },
      handler: async (ctx) => presentClientList(await deps.clients.list(ctx.state.user!.tenant_id, LIST_LIMIT)),
    }),
    route({
      method: 'delete', path: '/api/v1/oauth-clients/:client_id', operationId: 'revokeOauthClient', summary: 'Revoke a client and every token it was issued',
      security: SESSION, guards: [admin],
      params: z.object({ client_id: z.string() }),
      ok: { status: 200, description: 'revoked with all its tokens', schema: clientView },
      handler: async (ctx, { params }) => {
        const client = await deps.clients.revoke(ctx.state.user!.tenant_id, params.client_id);
        if (!client) throw AppError.notFound('oauth client');
        return presentClient(client);
      },
    }),
    /**
     * RFC 6749 client-credentials grant. The client authenticates with HTTP Basic or `client_id` + `client_secret`
     * in the body (form-encoded or JSON), never both (400 `invalid_request`); an Authorization header it cannot read as
     * Basic is 401 `invalid_client`. Answers and errors use the RFC's shapes. A body the reader refuses is
     * `invalid_request` (400), except a body over the limit (413) or of another media type (415), which keep the
     * gateway's error envelope: the RFC has no code for them.
     */
    route({
      method: 'post', path: '/api/v1/oauth/token', operationId: 'oauthToken', summary: 'Client-credentials grant (RFC 6749 §4.4)',
      security: NONE,
      body: tokenRequest,
      bodyKind: 'json-or-form',
      bodyLimitBytes: TOKEN_BODY_LIMIT,
      unreadable: (e) => (e.status === 400 ? rfcError(400, 'invalid_request', e.message) : e),
      invalid: (issues) =>
        issues.some((i) => i.path === 'grant_type')
          ? rfcError(400, 'unsupported_grant_type', 'only grant_type=client_credentials is supported')
          : rfcError(400, 'invalid_request', issues.map((i) => `${i.path}: ${i.message}`).join('; ')),
      ok: { status: 200, description: 'access token', schema: tokenView },
      responses: {
        400: { description: 'invalid_request, invalid_scope or unsupported_grant_type', schema: oauthErrorView },
        401: { description: 'invalid_client', schema: oauthErrorView },
        429: { description: 'slow_down', schema: oauthErrorView, headers: { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } } },
      },
      handler: async (ctx, { body }) => {
        ctx.set('cache-control', 'no-store');
        ctx.set('pragma', 'no-cache');
        const basic = basicCredentials(ctx.get('authorization'));
        // RFC 6749 §2.3: a client uses one authentication method per request.
        if (basic && (body.client_secret !== undefined || (body.client_id !== undefined && body.client_id !== basic.id))) {
          throw rfcError(400, 'invalid_request', 'authenticate the client one way: HTTP Basic or client_id and client_secret in the body, not both');
        }
        const clientId = basic?.id ?? body.client_id ?? '';
        const clientSecret = basic?.secret ?? body.client_secret ?? '';
        try {
          return await deps.tokens.issue(clientId, clientSecret, body.scope);
        } catch (e) {
          if (!(e instanceof OauthError)) throw e;
          const headers: Record<string, string> =
            e.status === 401 ? BASIC_CHALLENGE : e.status === 429 ? { 'Retry-After': String(e.retryAfterSeconds ?? 1) } : {};
          throw rfcError(e.status, e.error, e.description, headers);
        }
      },
    }),
  ];
}
