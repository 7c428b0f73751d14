import type { MemoryScope } from '../../application/context';
import type { DocumentView, ListFilter } from '../../store/documents';
import { KEY, MEMORY_PREFIX, READ_ONLY, err, route, type MemoryGuard } from '../route';
import { DocumentListSchema, DocumentSchema, ListDocumentsQuery, decodeCursor, presentDocument, presentDocumentPage } from './schema';

export interface DocumentRouteDeps {
  guard: MemoryGuard;
  documents: {
    get: (scope: MemoryScope, docId: string) => Promise<DocumentView>;
    list: (scope: MemoryScope, filter: ListFilter) => Promise<DocumentView[]>;
    remove: (scope: MemoryScope, docId: string) => Promise<void>;
  };
}

/** Document status (the ingest's `doc_id`), listing and removal. */
export function documentRoutes(deps: DocumentRouteDeps) {
  const tags = ['documents'];
  return [
    route({
      method: 'get', path: `${MEMORY_PREFIX}/documents`, operationId: 'listDocuments', summary: 'List documents, newest first', tags,
      security: KEY, guards: [deps.guard('read')],
      query: ListDocumentsQuery,
      ok: { status: 200, description: 'a page of documents', schema: DocumentListSchema },
      responses: { 400: err('invalid query or cursor (every issue listed in `error.details`)') },
      handler: async (ctx, { query }) => {
        const docs = await deps.documents.list(ctx.state.scope, {
          vault_id: query.vault_id,
          status: query.status,
          limit: query.limit,
          before: query.cursor ? decodeCursor(query.cursor) : undefined,
        });
        return presentDocumentPage(docs, query.limit);
      },
    }),
    route({
      method: 'get', path: `${MEMORY_PREFIX}/documents/:doc_id`, operationId: 'getDocument', summary: 'Document status', tags,
      security: KEY, guards: [deps.guard('read')],
      ok: { status: 200, description: 'the document', schema: DocumentSchema },
      handler: async (ctx, { params }) => presentDocument(await deps.documents.get(ctx.state.scope, params.doc_id ?? '')),
    }),
    route({
      method: 'delete', path: `${MEMORY_PREFIX}/documents/:doc_id`, operationId: 'deleteDocument', summary: 'Delete a document', tags,
      security: KEY, guards: [deps.guard('write')],
      ok: { status: 204, description: 'deleted, with its chunks, entities and facts' },
      responses: READ_ONLY,
      handler: async (ctx, { params }) => {
        await deps.documents.remove(ctx.state.scope, params.doc_id ?? '');
        ctx.status = 204;
      },
    }),
  ];
}
