import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApi } from './openapi';

describe('OpenAPI document', () => {
  it('is committed exactly as the schemas generate it (run `npx tsx services/graph/src/cli/write-openapi.ts` after a change)', () => {
    const committed = JSON.parse(readFileSync(join(__dirname, '..', 'openapi.json'), 'utf8'));
    expect(committed).toEqual(buildOpenApi());
  });

  it('documents every memory route', () => {
    const paths = Object.keys((buildOpenApi() as { paths: Record<string, unknown> }).paths);
    for (const p of ['/ingest', '/search', '/search/stream', '/uploads', '/documents/{doc_id}', '/vaults', '/review', '/contradictions', '/health']) {
      expect(paths).toContain(`/api/v1/memory${p}`);
    }
  });
});
