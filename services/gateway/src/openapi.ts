import { z } from 'zod';
import { MODULES } from './domain/scope';
import { createWorkspaceBody, workspaceListView, workspaceView } from './routes/workspaces/schema';
import { createProjectBody, projectListView, projectView } from './routes/projects/schema';
import { pingView } from './routes/pages/schema';
import { createKeyBody, createdKeyView, keyListView, keyView, rotateKeyBody, rotatedKeyView } from './routes/api-keys/schema';
import { clientListView, clientView, createClientBody, createdClientView, oauthErrorView, tokenRequest, tokenView } from './routes/oauth/schema';
import { loginBody, loginView, refreshErrorView, refreshView } from './routes/auth/schema';
import { changePasswordBody, detailView, userResetBody, userResetResponse, validationErrorView } from './routes/password/schema';

type Json = Record<string, unknown>;

/** JSON Schema of a zod schema, without the per-schema `$schema` line (the document declares its dialect). */
function schema(s: z.ZodType): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Json;
  return rest;
}

const errorBody = z.object({
  error: z.object({ code: z.string(), message: z.string(), request_id: z.string(), details: z.unknown().optional() }),
});

const json = (s: z.ZodType, description: string) => ({ description, content: { 'application/json': { schema: schema(s) } } });
const err = (description: string) => json(errorBody, description);
const body = (s: z.ZodType) => ({ required: true, content: { 'application/json': { schema: schema(s) } } });

const KEY = [{ apiKey: [] }, { oauth2: [] }];
const SESSION = [{ portalSession: [] }];

const keyErrors = {
  '401': err('credential missing, in the wrong header, mistyped, expired or revoked'),
  '402': err('plan limit (`error.details.reason` = `plan_limit`) or credit balance (`credit_balance`)'),
  '403': err('key scope, app_permissions, OAuth scope or IP allowlist'),
  '404': err('another tenant\'s or workspace\'s resource'),
  '429': err('per-key rate limit; see Retry-After and RateLimit-* headers'),
};
const sessionErrors = {
  '401': err('no valid portal session'),
  '403': err('the signed-in user is not an administrator'),
  '404': err('unknown id, another tenant\'s resource, or the route was called with an API key or OAuth token (in x-api-key or as the bearer)'),
  '429': err('per-user rate limit; see Retry-After and RateLimit-* headers'),
};
const bodyErrors = {
  '400': err('malformed JSON or invalid fields (every issue listed in `error.details`)'),
  '413': err('body larger than the limit'),
  '415': err('body is not JSON'),
};
const workspaceParam = { name: 'workspace_id', in: 'query', required: false, schema: { type: 'string' }, description: 'act in this workspace of the tenant' };
const idParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });

/**
 * The OpenAPI 3.1 document of the routes the gateway serves itself, built from the same zod schemas the
 * handlers validate with. Forwarded surfaces are described by their own services. `extraPaths` lets the
 * webhook routes add theirs.
 */
export function gatewayOpenApi(extraPaths: Record<string, Json> = {}): Json {
  return {
    openapi: '3.1.0',
    info: { title: 'Lore gateway', version: '1.0.0', description: 'Control plane, credentials and identity of the Lore gateway (spec 1 and spec 2\'s identity routes). See docs/gateway.md.' },
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'ck_live_, ck_test_, ck_eph_ or mk_ key, or an oat_ OAuth access token' },
        oauth2: {
          type: 'oauth2',
          flows: { clientCredentials: { tokenUrl: '/api/v1/oauth/token', scopes: Object.fromEntries(MODULES.flatMap((m) => [[`${m}:read`, `read ${m}`], [`${m}:write`, `change ${m} (implies read)`]])) } },
          description: 'The access token is sent in x-api-key like any key.',
        },
        portalSession: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'session JWT from /api/auth/login or /api/auth/refresh' },
      },
    },
    paths: {
      '/api/v1/pages/ping': { get: { operationId: 'ping', security: KEY, responses: { '200': json(pingView, 'the tenant resolved from the credential'), ...keyErrors } } },
      '/api/v1/workspaces': {
        get: { operationId: 'listWorkspaces', security: KEY, responses: { '200': json(workspaceListView, 'workspace list wrapper'), ...keyErrors } },
        post: { operationId: 'createWorkspace', security: KEY, requestBody: body(createWorkspaceBody), responses: { ...bodyErrors, '201': json(workspaceView, 'the new workspace'), ...keyErrors } },
      },
      '/api/v1/workspaces/{workspace_id}/activate': {
        post: { operationId: 'activateWorkspace', security: KEY, parameters: [idParam('workspace_id')], responses: { '200': json(workspaceListView, 'workspace list wrapper'), ...keyErrors } },
      },
      '/api/v1/projects': {
        get: { operationId: 'listProjects', security: KEY, parameters: [workspaceParam], responses: { '200': json(projectListView, 'project list wrapper'), ...keyErrors } },
        post: { operationId: 'createProject', security: KEY, parameters: [workspaceParam], requestBody: body(createProjectBody), responses: { ...bodyErrors, '201': json(projectView, 'the project'), '409': err('slug taken'), ...keyErrors } },
      },
      '/api/v1/projects/{project_id}': {
        get: { operationId: 'getProject', security: KEY, parameters: [idParam('project_id'), workspaceParam], responses: { '200': json(projectView, 'the project'), ...keyErrors } },
      },
      '/api/v1/api-keys': {
        get: { operationId: 'listKeys', security: SESSION, responses: { '200': json(keyListView, 'keys of the tenant, without plaintext'), ...sessionErrors } },
        post: { operationId: 'createKey', security: SESSION, requestBody: body(createKeyBody), responses: { ...bodyErrors, '201': json(createdKeyView, 'the key; `key` is shown only here'), '402': err('plan limit'), ...sessionErrors } },
      },
      '/api/v1/api-keys/{key_id}': {
        get: { operationId: 'getKey', security: SESSION, parameters: [idParam('key_id')], responses: { '200': json(keyView, 'the key'), ...sessionErrors } },
        delete: { operationId: 'revokeKey', security: SESSION, parameters: [idParam('key_id')], responses: { '200': json(keyView, 'revoked at once on every replica'), ...sessionErrors } },
      },
      '/api/v1/api-keys/{key_id}/rotate': {
        post: {
          operationId: 'rotateKey', security: SESSION, parameters: [idParam('key_id')], requestBody: body(rotateKeyBody),
          responses: { ...bodyErrors, '201': json(rotatedKeyView, 'the replacement; the old key works until replaced_key_expires_at'), '409': err('revoked, expired or already rotated'), ...sessionErrors },
        },
      },
      '/api/v1/oauth-clients': {
        get: { operationId: 'listOauthClients', security: SESSION, responses: { '200': json(clientListView, 'OAuth clients'), ...sessionErrors } },
        post: { operationId: 'createOauthClient', security: SESSION, requestBody: body(createClientBody), responses: { ...bodyErrors, '201': json(createdClientView, '`client_secret` is shown only here'), ...sessionErrors } },
      },
      '/api/v1/oauth-clients/{client_id}': {
        delete: { operationId: 'revokeOauthClient', security: SESSION, parameters: [idParam('client_id')], responses: { '200': json(clientView, 'revoked with all its tokens'), ...sessionErrors } },
      },
      '/api/v1/oauth/token': {
        post: {
          operationId: 'oauthToken', security: [],
          requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: schema(tokenRequest) }, 'application/json': { schema: schema(tokenRequest) } } },
          responses: { '200': json(tokenView, 'access token'), '400': json(oauthErrorView, 'invalid_request, invalid_scope or unsupported_grant_type'), '401': json(oauthErrorView, 'invalid_client'), '429': json(oauthErrorView, 'slow_down') },
        },
      },
      '/api/auth/login': {
        post: { operationId: 'login', security: [], requestBody: body(loginBody), responses: { ...bodyErrors, '200': json(loginView, 'session JWT; the refresh_token cookie is set'), '401': err('wrong e-mail address or password'), '429': err('too many attempts') } },
      },
      '/api/auth/refresh': {
        post: {
          operationId: 'refresh', security: [], parameters: [{ name: 'refresh_token', in: 'cookie', required: true, schema: { type: 'string' } }],
          responses: { '200': json(refreshView, 'a new session JWT'), '400': json(refreshErrorView, 'no refresh_token cookie'), '401': json(refreshErrorView, 'INVALID_REFRESH_TOKEN'), '500': json(refreshErrorView, 'server fault; retry with backoff') },
        },
      },
      '/api/auth/logout': { post: { operationId: 'logout', security: [], responses: { '204': { description: 'refresh token revoked, cookie cleared' } } } },
      '/api/password/change-password': {
        post: {
          operationId: 'changePassword', security: SESSION, requestBody: body(changePasswordBody),
          responses: { '200': json(z.object({}), 'changed; every session of the account ends'), '400': json(detailView, 'wrong current password'), '401': json(detailView, 'not signed in'), '413': err('body larger than the limit'), '422': json(validationErrorView, 'invalid body'), '429': json(detailView, 'per-user rate limit; see Retry-After and RateLimit-* headers') },
        },
      },
      '/api/password/reset_password': {
        post: {
          operationId: 'resetPassword', security: SESSION, requestBody: body(userResetBody),
          responses: { '200': json(userResetResponse, 'a temporary password, shown once'), '401': json(detailView, 'not signed in'), '403': json(detailView, 'administrators only'), '404': json(detailView, 'no such user in the tenant'), '413': err('body larger than the limit'), '422': json(validationErrorView, 'invalid body'), '429': json(detailView, 'per-user rate limit; see Retry-After and RateLimit-* headers') },
        },
      },
      ...extraPaths,
    },
  };
}
