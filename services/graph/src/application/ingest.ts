import { createHash } from 'node:crypto';
import { truncate } from '@lore/ai';
import { htmlToText } from '@lore/ai/html-text';
import { TOPICS, type MemoryIngestMessage } from '@lore/contracts';
import { AppError, enqueueOutboxBatch, type OutboxMessage, type Sql } from '@lore/runtime';
import { scanAndMask, type DlpResult } from '../domain/dlp';
import { classify, UNASSIGNED_VAULT, type RoutingDecision, type VaultProfile } from '../domain/routing';
import { insertDocument, type ConnectorColumns, type NewDocument } from '../store/documents';
import { lockVault, vaultProfiles } from '../store/vaults';
import { newId, openMemory, rememberMemory, type MemoryConfig, type MemoryDeps, type MemoryScope } from './context';
import { eventMessage } from './events';

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
  /**
   * Runs first in the transaction, once the memory is open for writing; returning false abandons the ingest (an
   * upload already processed). It may write: what it did commits with the rest, or, when it returns false, alone.
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

/**
 * A title that cannot leak: the given one or the first line of the masked text, both masked and bounded. What
 * masking the given title took is counted with the document's (`dlp_matches`, `dlp_kinds`, `dlp_flagged`).
 */
function titleOf(dlp: DlpResult, given: string | undefined): { title: string; dlp: DlpResult } {
  if (given && given.trim()) {
    const masked = scanAndMask(given.trim());
    const kinds = { ...dlp.kinds };
    for (const [kind, n] of Object.entries(masked.kinds) as Array<[keyof DlpResult['kinds'], number]>) kinds[kind] = (kinds[kind] ?? 0) + n;
    return { title: truncate(masked.text, 200), dlp: { ...dlp, matches: dlp.matches + masked.matches, kinds } };
  }
  const firstLine = dlp.text
    .split('\n')
    .map((l) => l.replace(/^#+\s*/, '').trim())
    .find((l) => l.length > 0);
  return { title: truncate(firstLine ?? 'Untitled', 120), dlp };
}

/**
 * A document masked and titled, before any transaction: the CPU half of an ingest. Nothing unmasked is kept (the
 * title comes from the masked text, or is masked itself).
 */
export interface PreparedDocument {
  title: string;
  /** `text` or `markdown` (HTML was turned into markdown). */
  contentType: 'text' | 'markdown';
  dlp: DlpResult;
}

/**
 * Masks and titles `input` (HTML first turned into markdown). Refuses a content over `maxContentChars` (413) unless
 * `cutToLimit`, when DLP masks before it cuts, so a value across the cut is not kept in part; refuses an empty text.
 */
export function prepareDocument(config: Pick<MemoryConfig, 'maxContentChars'>, input: Omit<IngestInput, 'routing'>, cutToLimit: boolean): PreparedDocument {
  if (input.content.length > config.maxContentChars && !cutToLimit) {
    throw new AppError('PAYLOAD_TOO_LARGE', `content exceeds ${config.maxContentChars} characters`);
  }
  let text = input.content;
  let htmlTitle: string | null = null;
  let contentType: PreparedDocument['contentType'];
  if (input.content_type === 'html') {
    const h = htmlToText(text);
    text = h.text;
    htmlTitle = h.title;
    contentType = 'markdown';
  } else {
    contentType = input.content_type;
  }
  if (!text.trim()) throw new AppError('VALIDATION_FAILED', 'content is empty', { details: [{ path: 'content', message: 'has no text' }] });
  const titled = titleOf(scanAndMask(text, cutToLimit ? { maxChars: config.maxContentChars } : {}), input.title ?? htmlTitle ?? undefined);
  return { title: titled.title, contentType, dlp: titled.dlp };
}

/** The classifier's vault for a prepared document, among the memory's vault profiles. */
export function routeAutomatically(prepared: PreparedDocument, profiles: VaultProfile[]): RoutingDecision {
  return classify(`${prepared.title}\n${prepared.dlp.text}`, profiles);
}

/** What the row of an accepted document records besides its content. */
export interface Acceptance {
  docId: string;
  source: AcceptOptions['source'];
  routingMode: Routing['mode'];
  decision: RoutingDecision;
  uploadId?: string;
  /** Where a connector's document comes from and who may see it (`source: 'connector'`). */
  connector?: ConnectorColumns;
}

/** The `graph.documents` row of an accepted document (status `queued`: the worker indexes it). */
export function documentRow(scope: MemoryScope, prepared: PreparedDocument, a: Acceptance): NewDocument {
  return {
    doc_id: a.docId,
    memory_id: scope.memoryId,
    workspace_id: scope.workspaceId,
    vault_id: a.decision.vault_id,
    title: prepared.title,
    content_type: prepared.contentType,
    content: prepared.dlp.text,
    content_sha256: createHash('sha256').update(prepared.dlp.text).digest('hex'),
    source: a.source,
    upload_id: a.uploadId ?? null,
    routing_mode: a.routingMode,
    routing_confidence: a.decision.confidence,
    routing_scores: a.decision.scores.slice(0, 20),
    needs_review: a.decision.needs_review,
    dlp_matches: prepared.dlp.matches,
    dlp_kinds: prepared.dlp.kinds,
    connector: a.connector,
  };
}

/**
 * The outbox messages of an accepted document, in the order they are recorded: the `lore.memory.ingest` message for
 * the worker (unless `ingest` is false: a row that is never stored has nothing to index), then the
 * `memory.ingest.dlp_flagged` event when DLP masked something and `memory.ingest.auto_routed` when the classifier
 * chose the vault.
 */
export function acceptanceMessages(scope: MemoryScope, prepared: PreparedDocument, a: Acceptance, ingest = true): OutboxMessage[] {
  const out: OutboxMessage[] = [];
  if (ingest) {
    const message: MemoryIngestMessage = {
      event_id: newId('ing'),
      tenant_id: scope.tenantId,
      workspace_id: scope.workspaceId,
      memory_id: scope.memoryId,
      doc_id: a.docId,
    };
    out.push({ topic: TOPICS.memoryIngest, key: scope.memoryId, eventId: message.event_id, value: message });
  }
  const { dlp } = prepared;
  if (dlp.matches > 0) {
    out.push(eventMessage('memory.ingest.dlp_flagged', scope, { doc_id: a.docId, dlp_matches: dlp.matches, kinds: dlp.kinds, source: a.source }));
  }
  if (a.routingMode === 'auto') {
    out.push(
      eventMessage('memory.ingest.auto_routed', scope, {
        doc_id: a.docId,
        vault_id: a.decision.vault_id,
        routing_confidence: a.decision.confidence,
        needs_review: a.decision.needs_review,
        mode: a.routingMode,
      }),
    );
  }
  return out;
}

/** Counts an accepted document in the metrics, once its transaction committed. */
export function countAccepted(deps: MemoryDeps, prepared: PreparedDocument, a: Pick<Acceptance, 'source' | 'decision'>): void {
  deps.metrics.ingested.inc({ source: a.source, routed: a.decision.needs_review ? 'review' : 'vault' });
  for (const [kind, n] of Object.entries(prepared.dlp.kinds)) deps.metrics.dlpMatches.inc({ kind }, n);
}

/**
 * Accepts a document: DLP masks it (nothing unmasked is written anywhere), the classifier picks a vault (or the
 * caller did), and in ONE transaction the document row, the `lore.memory.ingest` message for the worker and the
 * `dlp_flagged` / `auto_routed` events are recorded (the messages with one statement). Either all of it happens or
 * none.
 */
export async function acceptDocument(deps: MemoryDeps, scope: MemoryScope, input: IngestInput, options: AcceptOptions): Promise<IngestResult | null> {
  const prepared = prepareDocument(deps.config, input, !!options.cutToLimit);
  const docId = newId('doc');

  const result = await deps.db.withTenant(scope.tenantId, async (sql) => {
    // The memory first (its row locked KEY SHARE, as every write does), then whatever `before` locks: the order an
    // erasure takes them in.
    await openMemory(deps, sql, scope);
    if (options.before && !(await options.before(sql))) return null;
    let decision: RoutingDecision;
    // The chosen vault is locked until the commit (`lockVault`, `vaultProfiles` with a lock): its deletion either
    // committed before (404, or not a candidate) or waits and then moves this document to the review queue.
    if (input.routing.mode === 'manual') {
      const vaultId = input.routing.vault_id;
      if (!(await lockVault(sql, scope.tenantId, scope.memoryId, vaultId))) throw AppError.notFound('vault');
      // Filed by hand into the review queue itself is a request for review, as `review` mode is: confidence 0 (spec 1:
      // needs_review is true below 0.70), not a certain filing that would also say it needs review.
      decision = vaultId === UNASSIGNED_VAULT
        ? { vault_id: UNASSIGNED_VAULT, confidence: 0, needs_review: true, scores: [] }
        : { vault_id: vaultId, confidence: 1, needs_review: false, scores: [] };
    } else if (input.routing.mode === 'review') {
      decision = { vault_id: UNASSIGNED_VAULT, confidence: 0, needs_review: true, scores: [] };
    } else {
      decision = routeAutomatically(prepared, await vaultProfiles(sql, scope.tenantId, scope.memoryId, true));
    }
    const acceptance: Acceptance = {
      docId,
      source: options.source,
      routingMode: input.routing.mode,
      decision,
      ...(options.uploadId ? { uploadId: options.uploadId } : {}),
    };
    await insertDocument(sql, scope.tenantId, documentRow(scope, prepared, acceptance));
    await enqueueOutboxBatch(sql, acceptanceMessages(scope, prepared, acceptance));
    const r: IngestResult = {
      doc_id: docId,
      vault_id: decision.vault_id,
      routing_confidence: decision.confidence,
      needs_review: decision.needs_review,
      dlp_matches: prepared.dlp.matches,
    };
    if (options.after) await options.after(sql, r);
    return { r, decision };
  });
  if (!result) return null;
  rememberMemory(deps, scope);
  countAccepted(deps, prepared, { source: options.source, decision: result.decision });
  return result.r;
}
