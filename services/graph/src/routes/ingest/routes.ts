import type { MemoryScope } from '../../application/context';
import type { IngestResult } from '../../application/ingest';
import { KEY, MEMORY_PREFIX, READ_ONLY, err, route, type MemoryGuard } from '../route';
import { IngestBodySchema, IngestResultSchema, presentIngestResult } from './schema';
import type { z } from 'zod';

export interface IngestRouteDeps {
  guard: MemoryGuard;
  /** DLP and routing in the request; indexing continues in the worker. */
  ingest: (scope: MemoryScope, input: z.output<typeof IngestBodySchema>) => Promise<IngestResult>;
}

/** POST /ingest: DLP + routing in the request, indexing in the worker; answers at once (spec 1 ingest result). */
export function ingestRoutes(deps: IngestRouteDeps) {
  return [
    route({
      method: 'post', path: `${MEMORY_PREFIX}/ingest`, operationId: 'ingestDocument', tags: ['ingest'],
      summary: 'Ingest content (DLP, vault routing; indexing continues in the background)',
      security: KEY, guards: [deps.guard('write')],
      body: IngestBodySchema,
      ok: { status: 200, description: 'the document as accepted: its id, vault, routing confidence and masked values', schema: IngestResultSchema },
      responses: { ...READ_ONLY, 404: err('a manual routing names a vault that does not exist, or the memory was deleted'), 413: err('body larger than the limit, or `content` longer than 500,000 characters') },
      handler: async (ctx, { body }) => presentIngestResult(await deps.ingest(ctx.state.scope, body)),
    }),
  ];
}
