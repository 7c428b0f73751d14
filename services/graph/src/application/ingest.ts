import { createHash } from 'node:crypto';
import { truncate } from '@lore/ai';
import { htmlToText } from '@lore/ai/html-text';
import { TOPICS, type MemoryIngestMessage } from '@lore/contracts';
import { AppError, enqueueOutbox, type Sql } from '@lore/runtime';
import { scanAndMask, type DlpResult } from '../domain/dlp';
import { classify, UNASSIGNED_VAULT, type RoutingDecision } from '../domain/routing';
import { insertDocument, type ConnectorColumns } from '../store/documents';
import { getVault, vaultProfiles } from '../store/vaults';
import { newId, openMemory, rememberMemory, type MemoryDeps, type MemoryScope } from './context';
import { emitEvent } from './events';

export type Routing = { mode: 'auto' } | { mode: 'manual'; vault_id: string } | { mode: 'review' };

export interface IngestInput {
  content: string;
  /** `text`, `markdown` or `html`. */
  content_type: 'text' | 'markdown' | 'html';
  title?: string;
  routing: Routing;
}

export interface IngestResult {
  doc_id: string;
  vault_id: string;
  routing_confidence: number;
  needs_review: boolean;
  dlp_matches: number;
}

export interface AcceptOptions {
  source: 'ingest' | 'upload' | 'connector';
  uploadId?: string;
  /** Where a connector's document comes from and who may see it (`source: 'connector'`). */
  connector?: ConnectorColumns;
  /**
   * Runs first in the transaction, once the memory is open for writing; returning false abandons the ingest (an
   * upload already processed, a connector's document found unchanged). It may write (a connector's replaced copy is
   * deleted here): what it did commits with the rest, or, when it returns false, alone.
   */
  before?: (sql: Sql) => Promise<boolean>;
  /** Runs last in the transaction (e.g. to link the upload to its document). */
  after?: (sql: Sql, result: IngestResult) => Promise<void>;
  /**
   * Keep the first `maxContentChars` characters of a longer text instead of refusing it (text extracted from an
   * upload); DLP masks before it cuts, so a value across the cut is not kept in part.
   */
  cutToLimit?: boolean;
}

/** A title that cannot leak: the given one or the first line of the masked text, both masked and bounded. */
function titleOf(masked: string, given: string | undefined): string {
  if (given && given.trim()) return truncate(scanAndMask(given.trim()).text, 200);
  const firstLine = masked
    .split('\n')
    .map((l) => l.replace(/^#+\s*/, '').trim())
    .find((l) => l.length > 0);
  return truncate(firstLine ?? 'Untitled', 120);
}

/**
 * Accepts a document: DLP masks it (nothing unmasked is written anywhere), the classifier picks a vault (or the
 * caller did), and in ONE transaction the document row, the `lore.memory.ingest` message for the worker and the
 * `dlp_flagged` / `auto_routed` events are recorded. Either all of it happens or none.
 */
export async function acceptDocument(deps: MemoryDeps, scope: MemoryScope, input: IngestInput, options: AcceptOptions): Promise<IngestResult | null> {
  if (input.content.length > deps.config.maxContentChars && !options.cutToLimit) {
    throw new AppError('PAYLOAD_TOO_LARGE', `content exceeds ${deps.config.maxContentChars} characters`);
  }
  let text = input.content;
  let htmlTitle: string | null = null;
  let contentType = input.content_type;
  if (contentType === 'html') {
    const h = htmlToText(text);
    text = h.text;
    htmlTitle = h.title;
    contentType = 'markdown';
  }
  if (!text.trim()) throw new AppError('VALIDATION_FAILED', 'content is empty', { details: [{ path: 'content', message: 'has no text' }] });
  const dlp: DlpResult = scanAndMask(text, options.cutToLimit ? { maxChars: deps.config.maxContentChars } : {});
  const title = titleOf(dlp.text, input.title ?? htmlTitle ?? undefined);
  const docId = newId('doc');

  const result = await deps.db.withTenant(scope.tenantId, async (sql) => {
    // The memory first (its row locked KEY SHARE, as every write does), then whatever `before` locks: the order an
    // erasure takes them in.
    await openMemory(deps, sql, scope);
    if (options.before && !(await options.before(sql))) return null;
    let decision: RoutingDecision;
    if (input.routing.mode === 'manual') {
      const vault = await getVault(sql, scope.tenantId, scope.memoryId, input.routing.vault_id);
      if (!vault) throw AppError.notFound('vault');
      decision = { vault_id: vault.vault_id, confidence: 1, needs_review: vault.vault_id === UNASSIGNED_VAULT, scores: [] };
    } else if (input.routing.mode === 'review') {
      decision = { vault_id: UNASSIGNED_VAULT, confidence: 0, needs_review: true, scores: [] };
    } else {
      decision = classify(`${title}\n${dlp.text}`, await vaultProfiles(sql, scope.tenantId, scope.memoryId));
    }
    await insertDocument(sql, scope.tenantId, {
      doc_id: docId,
      memory_id: scope.memoryId,
      workspace_id: scope.workspaceId,
      vault_id: decision.vault_id,
      title,
      content_type: contentType,
      content: dlp.text,
      content_sha256: createHash('sha256').update(dlp.text).digest('hex'),
      source: options.source,
      upload_id: options.uploadId ?? null,
      routing_mode: input.routing.mode,
      routing_confidence: decision.confidence,
      routing_scores: decision.scores.slice(0, 20),
      needs_review: decision.needs_review,
      dlp_matches: dlp.matches,
      dlp_kinds: dlp.kinds,
      connector: options.connector,
    });
    const message: MemoryIngestMessage = {
      event_id: newId('ing'),
      tenant_id: scope.tenantId,
      workspace_id: scope.workspaceId,
      memory_id: scope.memoryId,
      doc_id: docId,
    };
    await enqueueOutbox(sql, { topic: TOPICS.memoryIngest, key: scope.memoryId, eventId: message.event_id, value: message });
    if (dlp.matches > 0) {
      await emitEvent(sql, 'memory.ingest.dlp_flagged', scope, { doc_id: docId, dlp_matches: dlp.matches, kinds: dlp.kinds, source: options.source });
    }
    if (input.routing.mode === 'auto') {
      await emitEvent(sql, 'memory.ingest.auto_routed', scope, {
        doc_id: docId,
        vault_id: decision.vault_id,
        routing_confidence: decision.confidence,
        needs_review: decision.needs_review,
        mode: input.routing.mode,
      });
    }
    const r: IngestResult = {
      doc_id: docId,
      vault_id: decision.vault_id,
      routing_confidence: decision.confidence,
      needs_review: decision.needs_review,
      dlp_matches: dlp.matches,
    };
    if (options.after) await options.after(sql, r);
    return r;
  });
  if (result) {
    rememberMemory(deps, scope);
    deps.metrics.ingested.inc({ source: options.source, routed: result.needs_review ? 'review' : 'vault' });
    for (const [kind, n] of Object.entries(dlp.kinds)) deps.metrics.dlpMatches.inc({ kind }, n);
  }
  return result;
}
