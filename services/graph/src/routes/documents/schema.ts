import { AppError, queryInteger } from '@lore/runtime';
import { z } from 'zod';
import type { DocumentView } from '../../store/documents';

export const DocumentSchema = z.object({
  doc_id: z.string(),
  vault_id: z.string(),
  title: z.string(),
  content_type: z.string(),
  source: z.enum(['ingest', 'upload', 'connector']).describe('how the document arrived: ingested, uploaded, or pushed by a connector of core\'s'),
  upload_id: z.string().nullable(),
  status: z.enum(['queued', 'indexed', 'failed']),
  routing_mode: z.string(),
  routing_confidence: z.number().min(0).max(1),
  needs_review: z.boolean(),
  dlp_matches: z.number().int(),
  dlp_kinds: z.record(z.string(), z.number().int()),
  chunk_count: z.number().int(),
  entity_count: z.number().int(),
  error: z.string().nullable(),
  created_at: z.string(),
  indexed_at: z.string().nullable(),
});

export const DocumentListSchema = z.object({ documents: z.array(DocumentSchema), count: z.number().int(), next_cursor: z.string().nullable() });

export const ListDocumentsQuery = z.object({
  vault_id: z.string().max(64).optional(),
  status: z.enum(['queued', 'indexed', 'failed']).optional(),
  limit: queryInteger('limit', { min: 1, max: 200, default: 50 }),
  cursor: z.string().max(200).optional(),
});

/** Opaque keyset cursor: base64url of "<created_at>|<doc_id>". */
export function encodeCursor(createdAt: string, docId: string): string {
  return Buffer.from(`${createdAt}|${docId}`).toString('base64url');
}

/**
 * A cursor as `encodeCursor` writes it, or 400: exactly one `|`, the time in the ISO form the store writes (years 1 to
 * 9999, which PostgreSQL stores). Before 2026-11-30 any text `Date.parse` read got through (`1`, year 0, year
 * 275760) and PostgreSQL refused it: a 500.
 */
export function decodeCursor(cursor: string): { created_at: string; doc_id: string } {
  const parts = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const [createdAt, docId] = parts;
  const invalid = () => AppError.badRequest('cursor is invalid');
  if (parts.length !== 2 || !createdAt || !docId || docId.length > 128 || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(createdAt)) throw invalid();
  const time = new Date(createdAt);
  if (Number.isNaN(time.getTime()) || time.toISOString() !== createdAt || time.getUTCFullYear() < 1) throw invalid();
  return { created_at: createdAt, doc_id: docId };
}

export function presentDocument(d: DocumentView): z.input<typeof DocumentSchema> {
  return {
    doc_id: d.doc_id,
    vault_id: d.vault_id,
    title: d.title,
    content_type: d.content_type,
    source: d.source === 'upload' || d.source === 'connector' ? d.source : 'ingest',
    upload_id: d.upload_id,
    status: d.status,
    routing_mode: d.routing_mode,
    routing_confidence: d.routing_confidence,
    needs_review: d.needs_review,
    dlp_matches: d.dlp_matches,
    dlp_kinds: d.dlp_kinds,
    chunk_count: d.chunk_count,
    entity_count: d.entity_count,
    error: d.error,
    created_at: d.created_at,
    indexed_at: d.indexed_at,
  };
}

/** A page of documents, newest first, with the cursor of the next page when this one is full. */
export function presentDocumentPage(docs: DocumentView[], limit: number): z.input<typeof DocumentListSchema> {
  const last = docs[docs.length - 1];
  return { documents: docs.map(presentDocument), count: docs.length, next_cursor: docs.length === limit && last ? encodeCursor(last.created_at, last.doc_id) : null };
}
