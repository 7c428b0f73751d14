import type { MemoryScope } from '../../application/context';
import type { DocumentView, ListFilter } from '../../store/documents';
import { DocumentListSchema, DocumentSchema, decodeCursor, presentDocument, presentDocumentPage } from '../documents/schema';
import { KEY, MEMORY_PREFIX, READ_ONLY, err, route, type MemoryGuard } from '../route';
import { FileIntoVaultBody, ReviewQuery } from './schema';

export interface ReviewRouteDeps {
  guard: MemoryGuard;
  review: {
    list: (scope: MemoryScope, filter: ListFilter) => Promise<DocumentView[]>;
    file: (scope: MemoryScope, docId: string, vaultId: string) => Promise<DocumentView>;
  };
}

/** The review queue: documents waiting in `v_unassigned`, newest first, and the action that files one. */
export function reviewRoutes(deps: ReviewRouteDeps) {
  const tags = ['review'];
  return [
    route({
      method: 'get', path: `${MEMORY_PREFIX}/review`, operationId: 'listReview', summary: 'Review queue (documents in v_unassigned)', tags,
      security: KEY, guards: [deps.guard('read')],
      query: ReviewQuery,
      ok: { status: 200, description: 'a page of documents that need review', schema: DocumentListSchema },
      responses: { 400: err('invalid query or cursor (every issue listed in `error.details`)') },
      handler: async (ctx, { query }) => {
        const docs = await deps.review.list(ctx.state.scope, { needs_review: true, limit: query.limit, before: query.cursor ? decodeCursor(query.cursor) : undefined });
        return presentDocumentPage(docs, query.limit);
      },
    }),
    route({
      method: 'post', path: `${MEMORY_PREFIX}/review/:doc_id/file`, operationId: 'fileDocument', summary: 'File a document into a vault', tags,
      security: KEY, guards: [deps.guard('write')],
      body: FileIntoVaultBody,
      ok: { status: 200, description: 'the document, now in that vault with `needs_review: false`', schema: DocumentSchema },
      responses: { ...READ_ONLY, 404: err('unknown document or vault, or another tenant\'s'), 422: err('`v_unassigned` is not a vault to file into') },
      handler: async (ctx, { params, body }) => presentDocument(await deps.review.file(ctx.state.scope, params.doc_id ?? '', body.vault_id)),
    }),
  ];
}
