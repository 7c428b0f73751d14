import { AppError } from '@lore/runtime';
import { z } from 'zod';
import type { ConnectorResult } from '../../application/connector-documents';

/** Documents in one push; core's indexer sends 20 at a time. */
export const MAX_BATCH_DOCUMENTS = 100;
/** Source ids in one deletion. */
export const MAX_DELETE_IDS = 1000;

const ccPairId = z.number().int().min(1).describe('core\'s connector–credential pair the documents come from');
const sourceId = z.string().min(1).max(2048);

export const ConnectorDocumentSchema = z
  .object({
    id: sourceId.describe('the source\'s id of the document: a URL, a file location, a Drive file id'),
    title: z.string().max(1000),
    text: z.string().describe('the text to index; longer than the memory takes (500,000 characters by default): its beginning is kept; empty: skipped'),
    link: z.string().max(4096),
    source_type: z.string().max(64).describe('the connector\'s kind: web, file, google_drive...'),
    updated_at: z.iso.datetime({ offset: true }).nullable().describe('when the source last changed the document'),
    primary_owners: z.array(z.string().max(1000)).max(1000).nullable(),
    secondary_owners: z.array(z.string().max(1000)).max(1000).nullable(),
    metadata: z
      .record(z.string().max(1000), z.string().max(100_000))
      .refine((m) => Object.keys(m).length <= 1000, 'at most 1000 entries')
      .describe('the source\'s attributes of the document (values are masked by DLP like the text)'),
    content_hash: z.string().max(128).describe('the connector\'s hash of what it read: the same hash again means nothing to re-index'),
  })
  .strict();

export const UpsertConnectorDocumentsBody = z
  .object({
    cc_pair_id: ccPairId,
    access: z
      .object({
        public: z.boolean().describe('false: only administrators and the members of `groups` see the documents'),
        groups: z.array(z.number().int()).max(100).describe('the user groups (ids, the gateway\'s) whose members see them when they are not public'),
      })
      .strict(),
    documents: z.array(ConnectorDocumentSchema).max(MAX_BATCH_DOCUMENTS),
  })
  .strict();

export const ConnectorResultSchema = z.object({
  id: z.string().describe('the source\'s id, as pushed'),
  doc_id: z.string().nullable().describe('the memory\'s document (a new id when the content changed); null when skipped and none is held'),
  outcome: z.enum(['created', 'updated', 'unchanged', 'skipped']),
  reason: z.string().optional().describe('why the document was skipped'),
});

export const UpsertConnectorDocumentsResult = z.object({ results: z.array(ConnectorResultSchema).describe('one per pushed document, in input order') });

export const DeleteConnectorDocumentsBody = z
  .object({
    cc_pair_id: ccPairId,
    ids: z.array(sourceId).min(1).max(MAX_DELETE_IDS).optional().describe('the source ids to delete; absent: every document of the pair in the memory'),
  })
  .strict();

export const DeleteConnectorDocumentsResult = z.object({ deleted: z.number().int().min(0) });

/** A body its schema refuses: 422 with every issue, in the error envelope. */
export const unprocessable = (issues: Array<{ path: string; message: string }>): AppError => new AppError('UNPROCESSABLE', 'request body is invalid', { details: issues });

export function presentResults(results: ConnectorResult[]): z.input<typeof UpsertConnectorDocumentsResult> {
  return { results: results.map((r) => ({ id: r.id, doc_id: r.doc_id, outcome: r.outcome, ...(r.reason ? { reason: r.reason } : {}) })) };
}
