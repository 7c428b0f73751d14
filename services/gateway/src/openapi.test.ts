import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gatewayOpenApi } from './openapi';

describe('OpenAPI document', () => {
  it('is committed as generated (npm run openapi -w @lore/gateway)', () => {
    const committed = JSON.parse(readFileSync(join(__dirname, '..', 'openapi.json'), 'utf8')) as unknown;
    expect(committed).toEqual(JSON.parse(JSON.stringify(gatewayOpenApi())));
  });

  it('describes every route the gateway serves itself, with the spec 2 refresh shapes', () => {
    const doc = gatewayOpenApi() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/v1/pages/ping', '/api/v1/workspaces', '/api/v1/projects', '/api/v1/api-keys/{key_id}/rotate', '/api/auth/refresh', '/api/password/reset_password', '/api/v1/oauth/token']));
    expect(Object.keys(doc.paths['/api/auth/refresh']!.post!.responses)).toEqual(['200', '400', '401', '500']);
  });
});
