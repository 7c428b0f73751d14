import { enqueueOutboxBatch } from '@lore/runtime';
import { scanAndMask } from '../domain/dlp';
import { hasText, normalizeGroups, planBatch, slices, writesNothing, type BatchItem, type BatchPlan, type ConnectorAccess } from '../domain/connector-documents';
import { documentNodeKey } from '../domain/knowledge-graph';
import type { RoutingDecision } from '../domain/routing';
import { findConnectorCopies, isConnectorDuplicate, lockConnectorDocuments, setConnectorAccess } from '../store/connector-documents';
import { deleteDocuments, insertDocuments, type ConnectorColumns } from '../store/documents';
import { markGraphsHoldingAdminOnly } from '../store/knowledge-graphs';
import { vaultProfiles } from '../store/vaults';
import { newId, openMemory, rememberMemory, type MemoryDeps, type MemoryScope } from './context';
import { acceptanceMessages, countAccepted, documentRow, prepareDocument, routeAutomatically, type Acceptance, type PreparedDocument } from './ingest';

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
 * Puts a connector's batch into the memory as ONE unit: one transaction, whatever the number of documents, and
 * either all of it is written or nothing (a failure answers an error and writes nothing of the batch). The
 * documents are decided in input order as pushing them one by one would (`planBatch`): an unchanged document (same
 * content hash) keeps its copy and is not re-indexed (only who may see it is updated when that changed); a changed
 * one replaces its copy — the old one deleted and the new one accepted through the ingest pipeline (DLP, automatic
 * routing, the worker's message) in the same transaction; a new one is accepted; an empty text is skipped.
 *
 * A look without a lock comes first (one statement, no transaction): a batch the memory holds unchanged, access
 * included, is answered from it, and only the documents to accept are masked and titled — before the transaction
 * opens. The transaction then opens the memory (the erasure check), reads (and locks) the vault profiles for routing,
 * locks the batch's copies, decides again under those locks, and writes with a constant number of statements: the
 * replaced copies' deletion (`deleteDocuments`), one access update, one multi-row insert of the documents and one of their
 * outbox messages. Two pushes racing to create the same document: the second's insert fails on the unique index and
 * its whole batch is tried once more, now finding the first's copies.
 */
export async function upsertConnectorDocuments(deps: MemoryDeps, scope: MemoryScope, batch: ConnectorBatch): Promise<ConnectorResult[]> {
  const access: ConnectorAccess = { public: batch.access.public, groups: normalizeGroups(batch.access.groups) };
  const docs = batch.documents;
  const items: BatchItem[] = docs.map((d) => ({ id: d.id, contentHash: d.content_hash, hasText: hasText(d.text) }));
  const lookup = docs.map((d) => d.id);

  // Masked and titled once, before any transaction; a document the look found unchanged but the locked decision
  // accepts (a concurrent push changed its copy meanwhile) is prepared when the transaction needs it.
  const prepared = new Map<number, PreparedConnectorDocument>();
  const prepare = (i: number): PreparedConnectorDocument => {
    let p = prepared.get(i);
    if (!p) {
      p = prepareConnectorDocument(deps, batch.cc_pair_id, access, docs[i]!);
      prepared.set(i, p);
    }
    return p;
  };

  const look = planBatch(
    items,
    await findConnectorCopies((text, params) => deps.db.statementAsTenant(scope.tenantId, text, params), scope.tenantId, scope.memoryId, batch.cc_pair_id, lookup, false),
    access,
    () => '',
  );
  let plan = look;
  let written: WrittenBatch | null = null;
  if (!writesNothing(look)) {
    for (const i of look.accepted) prepare(i);
    written = await writeBatch(deps, scope, batch.cc_pair_id, access, items, lookup, prepare, false);
    plan = written.plan;
  }

  if (written) {
    rememberMemory(deps, scope);
    for (const [n, i] of plan.accepted.entries()) countAccepted(deps, prepare(i).doc, { source: 'connector', decision: written.decisions[n]! });
  }
  return plan.steps.map((step, i) => {
    deps.metrics.connectorDocuments.inc({ outcome: step.outcome });
    const id = docs[i]!.id;
    return step.outcome === 'skipped' ? { id, doc_id: step.docId, outcome: 'skipped', reason: 'the text is empty' } : { id, doc_id: step.docId, outcome: step.outcome };
  });
}

/** A pushed document masked and titled (`prepareDocument`, cut to the memory's limit) with its connector columns. */
interface PreparedConnectorDocument {
  doc: PreparedDocument;
  connector: ConnectorColumns;
}

function prepareConnectorDocument(deps: MemoryDeps, ccPairId: number, access: ConnectorAccess, doc: ConnectorDocumentInput): PreparedConnectorDocument {
  return {
    // A source's document longer than the memory takes keeps its beginning rather than failing the batch.
    doc: prepareDocument(deps.config, { content: doc.text, content_type: 'text', title: doc.title }, true),
    connector: connectorColumns(ccPairId, access, doc),
  };
}

interface WrittenBatch {
  plan: BatchPlan;
  /** The routing decision of each accepted document, in `plan.accepted`'s order. */
  decisions: RoutingDecision[];
}

/** The batch's transaction (see `upsertConnectorDocuments`); tried once more when a racing push inserted first. */
async function writeBatch(
  deps: MemoryDeps,
  scope: MemoryScope,
  ccPairId: number,
  access: ConnectorAccess,
  items: BatchItem[],
  lookup: string[],
  prepare: (i: number) => PreparedConnectorDocument,
  retry: boolean,
): Promise<WrittenBatch> {
  const { tenantId, memoryId } = scope;
  try {
    return await deps.db.withTenant(tenantId, async (sql) => {
      // The memory first (its row locked KEY SHARE, as every write does), then the copies: the order an erasure
      // takes them in.
      await openMemory(deps, sql, scope);
      // The vaults next, locked against their deletion until the commit (the documents are routed among them), and
      // before the copies: a vault's deletion locks its row before the documents it moves, so the two never wait on
      // each other in a circle.
      const profiles = await vaultProfiles(sql, tenantId, memoryId, true);
      const copies = await findConnectorCopies((text, params) => sql.query(text, params), tenantId, memoryId, ccPairId, lookup, true);
      const plan = planBatch(items, copies, access, () => newId('doc'));
      // Inside the accepting transaction: the memory never holds both copies of a document, nor neither.
      await deleteDocuments(sql, tenantId, memoryId, plan.deleted);
      await setConnectorAccess(sql, tenantId, memoryId, plan.accessChanged, access);
      // Documents only administrators may see (now private, or a new private copy): a graph that took one while it
      // was public becomes the administrators' alone, as a graph that took it private is.
      if (!access.public) await markGraphsHoldingAdminOnly(sql, tenantId, items.map((it) => documentNodeKey({ memory_id: memoryId, cc_pair_id: ccPairId, external_id: it.id, doc_id: '' })));
      if (plan.accepted.length === 0) return { plan, decisions: [] };
      const acceptances = new Map<number, Acceptance>();
      for (const i of plan.accepted) {
        const p = prepare(i);
        acceptances.set(i, { docId: plan.steps[i]!.docId!, source: 'connector', routingMode: 'auto', decision: routeAutomatically(p.doc, profiles), connector: p.connector });
      }
      // Inserted in source-id order: two pushes inserting the same new documents wait on each other's in the same
      // order (the first to insert one wins it; the other fails on the unique index and is tried again).
      const rows = plan.stored.map((i) => documentRow(scope, prepare(i).doc, acceptances.get(i)!)).sort((a, b) => compare(a.connector!.external_id, b.connector!.external_id));
      await insertDocuments(sql, tenantId, rows);
      const stored = new Set(plan.stored);
      await enqueueOutboxBatch(sql, plan.accepted.flatMap((i) => acceptanceMessages(scope, prepare(i).doc, acceptances.get(i)!, stored.has(i))));
      return { plan, decisions: plan.accepted.map((i) => acceptances.get(i)!.decision) };
    });
  } catch (err) {
    // Another push inserted one of these documents after this one locked: once more, now finding its copy.
    if (!retry && isConnectorDuplicate(err)) {
      deps.logger.debug({ tenant_id: tenantId, memory_id: memoryId, cc_pair_id: ccPairId }, 'a connector document was pushed twice at once: retrying the second batch');
      return writeBatch(deps, scope, ccPairId, access, items, lookup, prepare, true);
    }
    throw err;
  }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

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
 * statistics true, in transactions of at most CONNECTOR_DELETE_BATCH documents (each: the rows locked, then
 * `deleteDocuments`, seven statements whatever their number). Returns how many were deleted.
 */
export async function deleteConnectorDocuments(deps: MemoryDeps, scope: MemoryScope, ccPairId: number, ids: string[] | undefined): Promise<number> {
  const batch = (externalIds: string[] | null) =>
    deps.db.withTenant(scope.tenantId, async (sql) => {
      const docIds = await lockConnectorDocuments(sql, scope.tenantId, scope.memoryId, ccPairId, externalIds, CONNECTOR_DELETE_BATCH);
      return deleteDocuments(sql, scope.tenantId, scope.memoryId, docIds);
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
