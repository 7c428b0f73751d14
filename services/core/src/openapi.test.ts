import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Router from '@koa/router';
import { createLogger, createMetricsRegistry, openApiPath, validateOpenApiDocument, type IdentitySigner } from '@lore/runtime';
import { createCoreApp, documentedCoreOpenApi } from './app';
import type { CoreDeps } from './application/context';

type Parameter = { name: string; in: string; required: boolean; schema: Record<string, unknown> };
type Operation = { operationId: string; parameters?: Parameter[]; responses: Record<string, { content?: Record<string, { schema?: unknown }> }> };
type Doc = { openapi: string; info: { version: string }; paths: Record<string, Record<string, Operation>> };

const doc = () => documentedCoreOpenApi() as unknown as Doc;
const operations = (d: Doc) => Object.entries(d.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ key: `${method} ${path}`, op })));

/** Spec 2's chat session routes that core serves (send-message and the rest come with the chat answers). */
const SPEC_SESSION_ROUTES = [
  'get /api/chat/get-user-chat-sessions',
  'put /api/chat/update-chat-session-temperature',
  'put /api/chat/update-chat-session-model',
  'get /api/chat/get-chat-session/{session_id}',
  'post /api/chat/create-chat-session',
  'put /api/chat/rename-chat-session',
  'patch /api/chat/chat-session/{session_id}',
  'delete /api/chat/delete-all-chat-sessions',
  'delete /api/chat/delete-chat-session/{session_id}',
];

/** Spec 2's enterprise connector routes. */
const SPEC_CONNECTOR_ROUTES = [
  'get /api/manage/admin/connector/status',
  'get /api/manage/admin/connector',
  'post /api/manage/admin/connector',
  'get /api/manage/admin/cc-pair/{cc_pair_id}',
];

describe('core\'s OpenAPI document', () => {
  it('is committed as generated (node --conditions=lore-src --import tsx services/core/src/cli/write-openapi.ts)', () => {
    const committed = JSON.parse(readFileSync(join(__dirname, '..', 'openapi.json'), 'utf8')) as unknown;
    expect(committed).toEqual(JSON.parse(JSON.stringify(doc())));
  });

  it('is valid OpenAPI 3.1 and declares spec 2\'s version', async () => {
    const d = doc();
    expect(d.openapi).toBe('3.1.0');
    expect(d.info.version).toBe('0.0.0-dev');
    expect(await validateOpenApiDocument(d)).toEqual({ valid: true, errors: [] });
  });

  it('documents exactly the routes core\'s app registers', () => {
    const inert: unknown = new Proxy(() => inert, { get: () => inert, apply: () => inert });
    const app = createCoreApp({
      core: inert as CoreDeps,
      signer: inert as IdentitySigner,
      logger: createLogger({ level: 'silent', service: 'core-openapi-test' }),
      metrics: createMetricsRegistry('core-openapi-test', { defaultMetrics: false }),
      bodyLimitBytes: 1,
    });
    const routers = app.middleware.filter((m) => 'router' in m).map((m) => (m as unknown as { router: Router }).router);
    expect(routers).toHaveLength(1);
    const mounted = routers[0]!.stack.flatMap((l) => l.methods.filter((m) => m !== 'HEAD').map((m) => `${m.toLowerCase()} ${openApiPath(String(l.path))}`));
    expect(mounted.sort()).toEqual(operations(doc()).map((o) => o.key).sort());
    expect(mounted).toEqual(expect.arrayContaining(SPEC_SESSION_ROUTES));
    expect(mounted).toEqual(expect.arrayContaining(SPEC_CONNECTOR_ROUTES));
  });

  it('types spec 2\'s boolean and integer query parameters as the spec does, not as the text they are written in', () => {
    const d = doc();
    const param = (path: string, method: string, name: string) => d.paths[path]![method]!.parameters!.find((p) => p.name === name && p.in === 'query')!.schema;
    const int32 = { type: 'integer', minimum: -2_147_483_647, maximum: 2_147_483_647 };
    expect({
      only_non_project_chats: param('/api/chat/get-user-chat-sessions', 'get', 'only_non_project_chats'),
      include_failed_chats: param('/api/chat/get-user-chat-sessions', 'get', 'include_failed_chats'),
      project_id: param('/api/chat/get-user-chat-sessions', 'get', 'project_id'),
      is_shared: param('/api/chat/get-chat-session/{session_id}', 'get', 'is_shared'),
      include_deleted: param('/api/chat/get-chat-session/{session_id}', 'get', 'include_deleted'),
      hard_delete: param('/api/chat/delete-chat-session/{session_id}', 'delete', 'hard_delete'),
      chat_message_id: param('/api/chat/remove-chat-message-feedback', 'delete', 'chat_message_id'),
      persona_id: param('/api/chat/max-selected-document-tokens', 'get', 'persona_id'),
    }).toEqual({
      only_non_project_chats: { type: 'boolean', default: true },
      include_failed_chats: { type: 'boolean', default: false },
      project_id: { anyOf: [int32, { type: 'null' }] },
      is_shared: { type: 'boolean', default: false },
      include_deleted: { type: 'boolean', default: false },
      hard_delete: { type: ['boolean', 'null'] },
      chat_message_id: { type: 'integer', minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
      persona_id: int32,
    });
  });

  it('declares spec 2\'s 422 body on every route that validates input', () => {
    for (const { key, op } of operations(doc())) {
      if (key === 'get /api/openapi.json') continue;
      expect({ key, has422: op.responses['422'] !== undefined }).toEqual({ key, has422: true });
    }
  });
});
