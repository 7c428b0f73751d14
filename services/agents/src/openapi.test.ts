import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Router from '@koa/router';
import { createLogger, createMetricsRegistry, openApiPath, validateOpenApiDocument, type IdentitySigner } from '@lore/runtime';
import { createAgentsApp, documentedAgentsOpenApi } from './app';
import type { AgentsDeps } from './application/context';

type Operation = { operationId: string; parameters?: unknown[]; requestBody?: unknown; responses: Record<string, { content?: Record<string, { schema?: unknown }> }> };
type Doc = { openapi: string; info: { version: string }; paths: Record<string, Record<string, Operation>> };

const doc = () => documentedAgentsOpenApi() as unknown as Doc;
const operations = (d: Doc) => Object.entries(d.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ key: `${method} ${path}`, op })));

describe('the agents OpenAPI document', () => {
  it('is committed as generated (node --conditions=lore-src --import tsx services/agents/src/cli/write-openapi.ts)', () => {
    const committed = JSON.parse(readFileSync(join(__dirname, '..', 'openapi.json'), 'utf8')) as unknown;
    expect(committed).toEqual(JSON.parse(JSON.stringify(doc())));
  });

  it('is valid OpenAPI 3.1 and declares spec 3\'s version', async () => {
    const d = doc();
    expect(d.openapi).toBe('3.1.0');
    expect(d.info.version).toBe('1.0.0');
    expect(await validateOpenApiDocument(d)).toEqual({ valid: true, errors: [] });
  });

  it('documents exactly the routes the agents app registers', () => {
    const inert: unknown = new Proxy(() => inert, { get: () => inert, apply: () => inert });
    const app = createAgentsApp({
      agents: inert as AgentsDeps,
      signer: inert as IdentitySigner,
      logger: createLogger({ level: 'silent', service: 'agents-openapi-test' }),
      metrics: createMetricsRegistry('agents-openapi-test', { defaultMetrics: false }),
      bodyLimitBytes: 1,
    });
    const routers = app.middleware.filter((m) => 'router' in m).map((m) => (m as unknown as { router: Router }).router);
    expect(routers).toHaveLength(1);
    const mounted = routers[0]!.stack.flatMap((l) => l.methods.filter((m) => m !== 'HEAD').map((m) => `${m.toLowerCase()} ${openApiPath(String(l.path))}`));
    expect(mounted.sort()).toEqual(operations(doc()).map((o) => o.key).sort());
    expect(mounted).toEqual(expect.arrayContaining(['get /api/health', 'get /']));
  });

  it('declares a 422 on every route that validates input', () => {
    for (const { key, op } of operations(doc())) {
      // A route validates what it declares: parameters (path, query) or a body.
      if (!(op.parameters?.length || op.requestBody) || key === 'get /api/agents/openapi.json') continue;
      expect({ key, has422: op.responses['422'] !== undefined }).toEqual({ key, has422: true });
    }
  });

  it('declares the multipart form of every upload', () => {
    const uploads = operations(doc()).filter(({ key }) => key.startsWith('post ') && key.endsWith('/upload'));
    expect(uploads.map((u) => u.key).sort()).toEqual(['post /api/lists/csv/upload', 'post /service-deep-search/upload']);
    for (const { key, op } of uploads) {
      const form = (op.requestBody as { content?: Record<string, { schema?: { required?: string[] } }> } | undefined)?.content?.['multipart/form-data'];
      expect({ key, required: form?.schema?.required }).toEqual({ key, required: key.includes('deep-search') ? ['file', 'thread_id'] : ['file'] });
    }
  });
});
