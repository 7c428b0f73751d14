import type { MemoryCreatedMessage, MemoryDeletedMessage } from '@lore/contracts';
import { claimEvent, type Sql } from '@lore/runtime';
import {
  beginErasure,
  deleteChunksOf,
  deleteDocuments,
  deleteMemoryRows,
  deleteUploads,
  documentBatch,
  erasureState,
  finishErasure,
  liftErasure,
  MEMORY_TABLES,
  uploadBatch,
  type MemoryTable,
} from '../store/erasure';
import { eraseMemoryFactsBatch, forgetGraphSourceMemory, graphsWithMemory } from '../store/knowledge-graphs';
import type { MemoryDeps } from './context';

export const LIFECYCLE_CONSUMER = 'graph-worker.lifecycle';

export interface ErasureResult {
  outcome: 'erased' | 'duplicate';
  /** Rows deleted per table (chunks' postings go with the chunks and are not counted); `blobs` = uploaded files. */
  deleted: Record<string, number>;
}

/**
 * Erases everything a memory holds, for the gateway's `memory.deleted` (a delete without retaining data):
 *
 * 1. One transaction claims the event and turns the memory's row into a tombstone. From its commit on, every write
 *    to the memory refuses (`openMemory`, and the indexer's check), and it waited for the writes already under way.
 * 2. Uploads (their blobs first, then the rows), facts, mentions, contradictions, entities, BM25 statistics,
 *    vaults, then chunks with their postings and documents go, each in transactions of at most `eraseBatchRows`
 *    rows (documents: that many per batch, their chunks deleted first in batches of that size).
 * 3. Knowledge graphs built from the memory's connector documents lose the facts those documents gave and the nodes
 *    only they gave, in batches of the same size, and stop naming the memory among their sources.
 * 4. The tombstone is marked complete. It stays, so a message about the memory that arrives later still refuses.
 *
 * Every step is idempotent: a crash part-way makes the redelivered event resume (its claim is there, its erasure
 * not complete); a redelivery after completion, or after the memory id was created again, does nothing.
 */
export async function eraseMemory(deps: MemoryDeps, msg: MemoryDeletedMessage, eventId: string): Promise<ErasureResult> {
  const tenantId = msg.tenant_id;
  const memoryId = msg.memory_id;
  const run = <T>(fn: (sql: Sql) => Promise<T>) => deps.db.withTenant(tenantId, fn);
  const deleted: Record<string, number> = {};
  const count = (what: string, n: number) => {
    deleted[what] = (deleted[what] ?? 0) + n;
  };

  const go = await run(async (sql) => {
    if (await claimEvent(sql, LIFECYCLE_CONSUMER, eventId)) {
      await beginErasure(sql, tenantId, memoryId, eventId);
      return true;
    }
    const state = await erasureState(sql, tenantId, memoryId);
    return state?.erase_event_id === eventId && state.erased_at === null;
  });
  if (!go) {
    deps.metrics.erasures.inc({ outcome: 'duplicate' });
    return { outcome: 'duplicate', deleted };
  }

  const limit = Math.max(1, deps.config.eraseBatchRows);
  // Blobs before their rows: a crash in between leaves rows that the resumed erasure finds again, never
  // unreferenced bytes. (Each blob deletion is its own unit of work: never inside another transaction.)
  for (;;) {
    const uploads = await run((sql) => uploadBatch(sql, tenantId, memoryId, limit));
    if (uploads.length === 0) break;
    for (const u of uploads) await deps.blobs.delete(tenantId, u.blob_key);
    count('blobs', uploads.length);
    count('uploads', await run((sql) => deleteUploads(sql, tenantId, memoryId, uploads.map((u) => u.upload_id))));
  }
  const drain = async (table: MemoryTable) => {
    for (;;) {
      const n = await run((sql) => deleteMemoryRows(sql, table, tenantId, memoryId, limit));
      count(table, n);
      if (n < limit) return;
    }
  };
  for (const table of MEMORY_TABLES) await drain(table);
  for (;;) {
    const docs = await run((sql) => documentBatch(sql, tenantId, memoryId, limit));
    if (docs.length === 0) break;
    for (;;) {
      const n = await run((sql) => deleteChunksOf(sql, tenantId, docs, limit));
      count('chunks', n);
      if (n < limit) break;
    }
    count('documents', await run((sql) => deleteDocuments(sql, tenantId, memoryId, docs)));
  }
  // Knowledge graphs built from the memory's connector documents: their facts and the nodes only they gave.
  for (const graphId of await run((sql) => graphsWithMemory(sql, tenantId, memoryId))) {
    for (;;) {
      const n = await run((sql) => eraseMemoryFactsBatch(sql, tenantId, graphId, memoryId, limit));
      count('graph_facts', n.edges);
      count('graph_nodes', n.nodes);
      if (n.edges === 0 && n.nodes < limit) break;
    }
    await run((sql) => forgetGraphSourceMemory(sql, tenantId, graphId, memoryId));
  }
  await run((sql) => finishErasure(sql, tenantId, memoryId, eventId));
  deps.metrics.erasures.inc({ outcome: 'erased' });
  deps.logger.info({ tenant_id: tenantId, memory_id: memoryId, event_id: eventId, deleted }, 'memory erased');
  return { outcome: 'erased', deleted };
}

/**
 * The gateway created a memory with this id (again): if an earlier memory of that id was erased, the tombstone
 * goes and the memory starts empty. Messages of one memory are consumed in order, so the erasure announced before
 * the creation has finished by now.
 */
export async function reopenMemory(deps: MemoryDeps, msg: MemoryCreatedMessage, eventId: string): Promise<'reopened' | 'unchanged' | 'duplicate'> {
  const outcome = await deps.db.withTenant(msg.tenant_id, async (sql) => {
    if (!(await claimEvent(sql, LIFECYCLE_CONSUMER, eventId))) return 'duplicate' as const;
    return (await liftErasure(sql, msg.tenant_id, msg.memory_id)) ? ('reopened' as const) : ('unchanged' as const);
  });
  if (outcome === 'reopened') {
    deps.metrics.erasures.inc({ outcome: 'lifted' });
    deps.logger.info({ tenant_id: msg.tenant_id, memory_id: msg.memory_id }, 'memory id created again: erasure lifted');
  }
  return outcome;
}
