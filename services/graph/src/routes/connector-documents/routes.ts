import type { ConnectorBatch, ConnectorResult } from '../../application/connector-documents';
import type { MemoryScope } from '../../application/context';
import { IDENTITY, INTERNAL_PREFIX, err, route, type Guard } from '../route';
import {
  DeleteConnectorDocumentsBody,
  DeleteConnectorDocumentsResult,
  UpsertConnectorDocumentsBody,
  UpsertConnectorDocumentsResult,
  presentResults,
  unprocessable,
} from './schema';

export interface ConnectorDocumentRouteDeps {
  /** The signed identity of an administrator, with a memory (`connectorGuard`). */
  guard: Guard;
  connectorDocuments: {
    /** Largest body of a push or a deletion, in bytes (the table's limit is far smaller). */
    bodyLimitBytes: number;
    upsert: (scope: MemoryScope, batch: ConnectorBatch) => Promise<ConnectorResult[]>;
    remove: (scope: MemoryScope, ccPairId: number, ids: string[] | undefined) => Promise<number>;
  };
}

const RESPONSES = {
  400: err('the body is not clean JSON (a NUL character, a lone surrogate, invalid UTF-8, malformed)'),
  401: err('no valid signed identity in x-lore-identity'),
  403: err('the identity\'s role is not an administrator\'s, or its key is read-only'),
  404: err('the identity selects no memory, or the memory was deleted'),
  422: err('fields that break the schema (every issue listed in `error.details`)'),
};

/**
 * Graph-internal: core's connectors push the documents they read into the identity's memory, and delete them.
 * Under INTERNAL_PREFIX, which the gateway never forwards, so only the cluster's own services reach these routes;
 * they are in the served document under the tag `internal` for those services.
 */
export function connectorDocumentRoutes(deps: ConnectorDocumentRouteDeps) {
  const tags = ['internal'];
  return [
    route({
      method: 'post', path: `${INTERNAL_PREFIX}/connector-documents`, operationId: 'upsertConnectorDocuments', tags,
      summary: 'Graph-internal: put a connector\'s documents into the memory (created, updated, unchanged or skipped each)',
      description:
        'Not reachable through the gateway. Each document is matched by (memory, `cc_pair_id`, `id`): the same `content_hash` keeps it ' +
        '(access updated in place), another replaces it through the ingest pipeline (DLP, automatic routing, indexing by the worker). ' +
        'The batch is one transaction: an error writes nothing of it.',
      security: IDENTITY, guards: [deps.guard],
      body: UpsertConnectorDocumentsBody, bodyLimitBytes: deps.connectorDocuments.bodyLimitBytes, invalid: unprocessable,
      ok: { status: 200, description: 'the outcome of every document, in input order', schema: UpsertConnectorDocumentsResult },
      responses: RESPONSES,
      handler: async (ctx, { body }) => presentResults(await deps.connectorDocuments.upsert(ctx.state.scope, body)),
    }),
    route({
      method: 'post', path: `${INTERNAL_PREFIX}/connector-documents/delete`, operationId: 'deleteConnectorDocuments', tags,
      summary: 'Graph-internal: delete a connector\'s documents from the memory (the given source ids, or all of the pair)',
      description: 'Not reachable through the gateway. Deletes in transactions of at most 100 documents, keeping the full-text statistics true.',
      security: IDENTITY, guards: [deps.guard],
      body: DeleteConnectorDocumentsBody, bodyLimitBytes: deps.connectorDocuments.bodyLimitBytes, invalid: unprocessable,
      ok: { status: 200, description: 'how many documents were deleted', schema: DeleteConnectorDocumentsResult },
      responses: RESPONSES,
      handler: async (ctx, { body }) => ({ deleted: await deps.connectorDocuments.remove(ctx.state.scope, body.cc_pair_id, body.ids) }),
    }),
  ];
}
