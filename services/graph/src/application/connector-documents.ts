import type { Sql } from '@lore/runtime';
import { scanAndMask } from '../domain/dlp';
import { hasText, normalizeGroups, planUpsert, slices, type ConnectorAccess } from '../domain/connector-documents';
import { findConnectorDocument, isConnectorDuplicate, lockConnectorDocuments, setConnectorAccess } from '../store/connector-documents';
import { deleteDocument, type ConnectorColumns } from '../store/documents';
import type { MemoryDeps, MemoryScope } from './context';
import { acceptDocument } from './ingest';

/** One document as a connector read it (the body of `POST /internal/v1/connector-documents`). */
export interface ConnectorDocumentInput {
  /** The source's id of the document: a URL, a file location, a Drive file id. */
  id: string;
  title: string;
  text: string;
  link: string;
  source_type: string;
  updated_at: string | null;
  primary_owners: string[] | null;
  secondary_owners: string[] | null;
  metadata: Record<string, string>;
  /** The connector's hash of what it read: the same hash again means the same content. */
  content_hash: string;
}

export interface ConnectorBatch {
  cc_pair_id: number;
  access: ConnectorAccess;
  documents: ConnectorDocumentInput[];
}

export type ConnectorOutcome = 'created' | 'updated' | 'unchanged' | 'skipped';

export interface ConnectorResult {
  id: string;
  doc_id: string | null;
  outcome: ConnectorOutcome;
  /** Why a document was skipped. */
  reason?: string;
}

/** Documents deleted per transaction by the pair's deletion. */
export const CONNECTOR_DELETE_BATCH = 100;

/**
 * Puts a connector's batch into the memory, document by document in input order, each in its own transaction: an
 * unchanged document (same content hash) keeps its copy and is not re-indexed (only who may see it is updated when
 * that changed); a changed one replaces its copy — the old one deleted and the new one accepted through the ingest
 * pipeline (DLP, automatic routing, the worker's message) in ONE transaction; a new one is accepted; an empty text
 * is skipped. A failure answers an error with the documents before it committed: the same batch pushed again finds
 * them unchanged.
 */
export async function upsertConnectorDocuments(deps: MemoryDeps, scope: MemoryScope, batch: ConnectorBatch): Promise<ConnectorResult[]> {
  const access: ConnectorAccess = { public: batch.access.public, groups: normalizeGroups(batch.access.groups) };
  const results: ConnectorResult[] = [];
  for (const doc of batch.documents) {
    const result = await upsertOne(deps, scope, batch.cc_pair_id, access, doc, false);
    deps.metrics.connectorDocuments.inc({ outcome: result.outcome });
    results.push(result);
  }
  return results;
}

async function upsertOne(deps: MemoryDeps, scope: MemoryScope, ccPairId: number, access: ConnectorAccess, doc: ConnectorDocumentInput, retry: boolean): Promise<ConnectorResult> {
  const find = (lock: boolean) => (sql: Sql) => findConnectorDocument(sql, scope.tenantId, scope.memoryId, ccPairId, doc.id, lock);
  // A cheap look first: an unchanged document (most of a connector's re-run) costs neither DLP nor routing.
  const seen = await deps.db.withTenant(scope.tenantId, find(false));
  if (!hasText(doc.text)) return { id: doc.id, doc_id: seen?.doc_id ?? null, outcome: 'skipped', reason: 'the text is empty' };
  if (planUpsert(seen, doc.content_hash, access).kind === 'unchanged') {
    // Decided again under the row's lock: a concurrent push may have changed the copy since the look.
    const kept = await deps.db.withTenant(scope.tenantId, async (sql) => {
      const plan = planUpsert(await find(true)(sql), doc.content_hash, access);
      if (plan.kind !== 'unchanged') return null;
      if (plan.access) await setConnectorAccess(sql, scope.tenantId, scope.memoryId, plan.docId, plan.access);
      return plan.docId;
    });
    if (kept) return { id: doc.id, doc_id: kept, outcome: 'unchanged' };
  }

  let outcome: ConnectorOutcome = 'created';
  let keptDocId: string | null = null;
  try {
    const accepted = await acceptDocument(
      deps,
      scope,
      { content: doc.text, content_type: 'text', title: doc.title, routing: { mode: 'auto' } },
      {
        source: 'connector',
        // A source's document longer than the memory takes keeps its beginning rather than failing the batch.
        cutToLimit: true,
        connector: connectorColumns(ccPairId, access, doc),
        before: async (sql) => {
          const plan = planUpsert(await find(true)(sql), doc.content_hash, access);
          if (plan.kind === 'unchanged') {
            if (plan.access) await setConnectorAccess(sql, scope.tenantId, scope.memoryId, plan.docId, plan.access);
            outcome = 'unchanged';
            keptDocId = plan.docId;
            return false;
          }
          if (plan.kind === 'replace') {
            // Inside the accepting transaction: the memory never holds both copies, nor neither.
            await deleteDocument(sql, scope.tenantId, scope.memoryId, plan.docId);
            outcome = 'updated';
          } else {
            outcome = 'created';
          }
          return true;
        },
      },
    );
    return accepted ? { id: doc.id, doc_id: accepted.doc_id, outcome } : { id: doc.id, doc_id: keptDocId, outcome: 'unchanged' };
  } catch (err) {
    // Another push inserted the same document after this one looked: once more, now finding its copy.
    if (!retry && isConnectorDuplicate(err)) {
      deps.logger.debug({ tenant_id: scope.tenantId, memory_id: scope.memoryId, cc_pair_id: ccPairId }, 'a connector document was pushed twice at once: retrying the second');
      return upsertOne(deps, scope, ccPairId, access, doc, true);
    }
    throw err;
  }
}

/**
 * The connector columns of the stored document. Metadata values are the source's free text, so DLP masks them like
 * the content; owners and the link name people and places and are kept as the source gave them.
 */
function connectorColumns(ccPairId: number, access: ConnectorAccess, doc: ConnectorDocumentInput): ConnectorColumns {
  return {
    cc_pair_id: ccPairId,
    external_id: doc.id,
    source_type: doc.source_type,
    link: doc.link,
    primary_owners: doc.primary_owners,
    secondary_owners: doc.secondary_owners,
    metadata: Object.fromEntries(Object.entries(doc.metadata).map(([k, v]) => [k, scanAndMask(v).text])),
    source_updated_at: doc.updated_at,
    connector_hash: doc.content_hash,
    access_public: access.public,
    access_groups: access.groups,
  };
}

/**
 * Deletes the pair's documents from the memory — those with the given source ids, or all of them — keeping the BM25
 * statistics true (`deleteDocument`), in transactions of at most CONNECTOR_DELETE_BATCH documents. Returns how many
 * were deleted.
 */
export async function deleteConnectorDocuments(deps: MemoryDeps, scope: MemoryScope, ccPairId: number, ids: string[] | undefined): Promise<number> {
  const batch = (externalIds: string[] | null) =>
    deps.db.withTenant(scope.tenantId, async (sql) => {
      const docIds = await lockConnectorDocuments(sql, scope.tenantId, scope.memoryId, ccPairId, externalIds, CONNECTOR_DELETE_BATCH);
      let deleted = 0;
      for (const docId of docIds) if (await deleteDocument(sql, scope.tenantId, scope.memoryId, docId)) deleted++;
      return deleted;
    });
  let total = 0;
  if (ids) {
    for (const slice of slices([...new Set(ids)], CONNECTOR_DELETE_BATCH)) total += await batch(slice);
  } else {
    // Until none remain (documents a concurrent push adds meanwhile go too).
    for (let n = await batch(null); n > 0; n = await batch(null)) total += n;
  }
  deps.metrics.connectorDeletions.inc(total);
  return total;
}
