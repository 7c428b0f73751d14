import { indexingLease, type Embedder } from '@lore/ai';
import { claimEvent } from '@lore/runtime';
import type { MemoryIngestMessage } from '@lore/contracts';
import { chunkText } from '../domain/chunking';
import { extractEntities, extractFacts, findContradictions, type Fact } from '../domain/entities';
import { assessHealth } from '../domain/health';
import { healthInputs } from '../store/governance';
import {
  existingFacts,
  loadDocumentToIndex,
  markFailed,
  markIndexed,
  writeChunks,
  writeContradictions,
  writeEntities,
  writeFacts,
} from '../store/index-store';
import { claimHealthSlot, memoryErasing } from '../store/memories';
import { chunksToReembed, tenantsToReembed, writeReembedded } from '../store/reembed';
import { failUploadOfMissingDocument, setUploadStatus } from '../store/uploads';
import { newId, type MemoryDeps, type MemoryScope } from './context';
import { emitEvent } from './events';

export const INGEST_CONSUMER = 'graph-worker.ingest';

/** Events of one kind per document are capped: a document naming 5,000 things must not flood webhooks. */
const MAX_ENTITY_EVENTS = 100;
const MAX_CONTRADICTION_EVENTS = 50;

export type IndexOutcome = 'indexed' | 'duplicate' | 'missing' | 'failed' | 'erased';

/**
 * Indexes one accepted document. Heavy work (chunking, embeddings, entity and fact extraction) happens outside
 * any transaction; then ONE transaction claims the event, locks the document's row, writes chunks, postings,
 * statistics, entities, facts and contradictions, flips the document to `indexed` and records the events. A crash
 * anywhere before the commit leaves nothing behind and the redelivered message starts over; a redelivery after the
 * commit finds the claim and does nothing. So every document is indexed exactly once. A document deleted before it
 * is indexed is `missing`, and an upload still waiting for it ends `failed` (its deletion settles the upload too;
 * this covers a document that went any other way).
 */
export async function indexDocument(deps: MemoryDeps, msg: MemoryIngestMessage, eventId: string): Promise<IndexOutcome> {
  // Held until the chunks are committed: an embedder switch waits for documents embedded with the old model.
  const lease = indexingLease(deps.embedder);
  try {
    return await indexWith(deps, lease.embedder, msg, eventId);
  } finally {
    lease.release();
  }
}

/** What a chunk's vector is computed from, at indexing and when it is re-embedded with another model. */
export function chunkEmbeddingText(title: string, heading: string | null | undefined, content: string): string {
  return `${title}\n${heading ?? ''}\n${content}`;
}

async function indexWith(deps: MemoryDeps, embedder: Embedder, msg: MemoryIngestMessage, eventId: string): Promise<IndexOutcome> {
  const doc = await deps.db.withTenant(msg.tenant_id, (sql) => loadDocumentToIndex(sql, msg.tenant_id, msg.doc_id));
  if (!doc) {
    await deps.db.withTenant(msg.tenant_id, (sql) => failUploadOfMissingDocument(sql, msg.tenant_id, msg.doc_id));
    return 'missing';
  }
  if (doc.status === 'indexed') return 'duplicate';
  const scope: MemoryScope = { tenantId: msg.tenant_id, workspaceId: doc.workspace_id, memoryId: doc.memory_id };

  const chunks = chunkText(doc.content);
  const embeddings = deps.vectors && chunks.length > 0
    ? { model: embedder.model, vectors: await embedder.embed(chunks.map((c) => chunkEmbeddingText(doc.title, c.heading, c.content))) }
    : null;
  const entities = extractEntities(doc.content);
  const facts: Fact[] = chunks.flatMap((c) => extractFacts(c.content, c.ord, 50)).slice(0, 500);

  const started = await deps.db.withTenant(msg.tenant_id, async (sql) => {
    if (!(await claimEvent(sql, INGEST_CONSUMER, eventId))) return null;
    // An erasure of the memory waits for this transaction, or this one sees it: the document is (or will be)
    // gone, and nothing must be written for it.
    if (await memoryErasing(sql, msg.tenant_id, doc.memory_id)) return 'erased' as const;
    // Locked until the commit: a filing, a vault deletion or the document's deletion waits for the chunks below,
    // or committed before and is seen here.
    const current = await loadDocumentToIndex(sql, msg.tenant_id, msg.doc_id, true);
    if (!current) {
      await failUploadOfMissingDocument(sql, msg.tenant_id, msg.doc_id);
      return 'missing' as const;
    }
    if (current.status === 'indexed') return null;
    // The vault may have changed (review) between the read above and now: index under the current one.
    const target = { ...doc, vault_id: current.vault_id };
    const chunkCount = await writeChunks(sql, msg.tenant_id, target, chunks, embeddings);
    const created = await writeEntities(sql, msg.tenant_id, target, entities, () => newId('ent'));
    const known = await existingFacts(sql, msg.tenant_id, doc.memory_id, doc.doc_id, [...new Set(facts.map((f) => f.entity_key))]);
    const pairs = findContradictions(facts.map((f) => ({ ...f, doc_id: doc.doc_id })), known);
    await writeFacts(sql, msg.tenant_id, target, facts);
    const contradictions = await writeContradictions(sql, msg.tenant_id, target, pairs, () => newId('ctr'));
    await markIndexed(sql, msg.tenant_id, doc.doc_id, chunkCount, entities.length);
    if (doc.upload_id) await setUploadStatus(sql, msg.tenant_id, doc.upload_id, 'completed', { doc_id: doc.doc_id });

    for (const e of created.slice(0, MAX_ENTITY_EVENTS)) {
      await emitEvent(sql, 'memory.entity.created', scope, { entity_id: e.entity_id, name: e.name, kind: e.kind, doc_id: doc.doc_id });
    }
    for (const c of contradictions.slice(0, MAX_CONTRADICTION_EVENTS)) {
      await emitEvent(sql, 'memory.entity.contradiction_detected', scope, {
        contradiction_id: c.contradiction_id,
        entity: c.entity_name,
        attribute: c.attribute,
        sources: [
          { document_id: c.doc_a, value: c.value_a },
          { document_id: c.doc_b, value: c.value_b },
        ],
      });
    }
    await emitEvent(sql, 'memory.ingest.completed', scope, {
      doc_id: doc.doc_id,
      vault_id: current.vault_id,
      chunk_count: chunkCount,
      upload_id: doc.upload_id,
    });
    if (await claimHealthSlot(sql, msg.tenant_id, doc.memory_id, deps.config.healthIntervalMs)) {
      const health = assessHealth(await healthInputs(sql, msg.tenant_id, doc.memory_id, deps.config.staleAfterMs));
      await emitEvent(sql, 'memory.health.assessed', scope, {
        score: health.score,
        status: health.status,
        diagnostics: health.diagnostics.map((d) => ({ code: d.code, severity: d.severity, value: d.value })),
      });
    }
    return { age: Number(current.age_seconds ?? 0) };
  });
  if (!started) return 'duplicate';
  if (started === 'erased' || started === 'missing') return started;
  deps.metrics.indexed.inc({ result: 'indexed' });
  deps.metrics.ingestToIndexed.observe(started.age);
  return 'indexed';
}

/** Gives up on a document after repeated failures: marks it failed (visible in status and health), once. */
export async function failDocument(deps: MemoryDeps, msg: MemoryIngestMessage, eventId: string, error: string): Promise<void> {
  await deps.db.withTenant(msg.tenant_id, async (sql) => {
    if (!(await claimEvent(sql, INGEST_CONSUMER, eventId))) return;
    await markFailed(sql, msg.tenant_id, msg.doc_id, error);
    const doc = await loadDocumentToIndex(sql, msg.tenant_id, msg.doc_id);
    if (doc?.upload_id) await setUploadStatus(sql, msg.tenant_id, doc.upload_id, 'failed', { error: 'indexing failed' });
  });
  deps.metrics.indexed.inc({ result: 'failed' });
}

/**
 * Gives every chunk whose vectors come from another model (or none) vectors of `embedder`, tenant by tenant, in
 * batches of `batchSize` chunks (one transaction each, the embedding computed outside it). Returns how many chunks
 * it wrote. Chunks written while it runs with another model are picked up by the caller's next pass (see
 * `EmbedderUpgrade` in @lore/ai).
 */
export async function reembedChunks(deps: MemoryDeps, embedder: Embedder, onBatch: (written: number) => void = () => {}, batchSize = 64): Promise<number> {
  let written = 0;
  for (const tenantId of await tenantsToReembed(deps.db, embedder.model)) {
    // A chunk that cannot be written (deleted meanwhile) is skipped by id, so a batch can never repeat forever.
    let afterSkips = new Set<string>();
    for (;;) {
      const batch = (await deps.db.withTenant(tenantId, (sql) => chunksToReembed(sql, tenantId, embedder.model, batchSize + afterSkips.size))).filter(
        (c) => !afterSkips.has(c.chunk_id),
      ).slice(0, batchSize);
      if (batch.length === 0) break;
      const vectors = await embedder.embed(batch.map((c) => chunkEmbeddingText(c.title, c.heading, c.content)));
      const n = await deps.db.withTenant(tenantId, (sql) => writeReembedded(sql, tenantId, embedder.model, batch.map((c) => c.chunk_id), vectors));
      if (n < batch.length) afterSkips = new Set([...afterSkips, ...batch.map((c) => c.chunk_id)]);
      written += n;
      onBatch(n);
    }
  }
  return written;
}
