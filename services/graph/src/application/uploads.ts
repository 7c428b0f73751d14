import type { Readable } from 'node:stream';
import { truncate } from '@lore/ai';
import { TOPICS, type MemoryUploadMessage } from '@lore/contracts';
import { AppError, announceBlob, claimEvent, enqueueOutbox, settleBlob } from '@lore/runtime';
import { GRAPH_BLOB_OWNER } from './blob-owner';
import { scanAndMask } from '../domain/dlp';
import { detectKind, extractDocument, extractionFailureReason, UnsupportedFileError } from '@lore/extract';
import { getUpload, insertUpload, setUploadStatus, type UploadRow } from '../store/uploads';
import { MemoryErasedError, newId, openMemory, rememberMemory, type MemoryDeps, type MemoryScope } from './context';
import { acceptDocument } from './ingest';

export const UPLOAD_CONSUMER = 'graph-worker.uploads';

export interface UploadView {
  upload_id: string;
  status: UploadRow['status'];
  filename: string;
  size_bytes: number;
  doc_id: string | null;
  extractor: string | null;
  ocr: boolean;
  error: string | null;
  created_at: string;
  updated_at: string;
}

export function uploadView(u: UploadRow): UploadView {
  return {
    upload_id: u.upload_id,
    status: u.status,
    filename: u.filename,
    size_bytes: u.size_bytes,
    doc_id: u.doc_id,
    extractor: u.extractor,
    ocr: u.ocr,
    error: u.error,
    created_at: u.created_at,
    updated_at: u.updated_at,
  };
}

/**
 * The name an upload is kept under: masked like content and cut to 200 characters, with the original extension kept
 * (its reader is chosen by it when the client sent no specific type): `bob@acme.docx` masked whole, or a 300-character
 * name cut, used to lose `.docx` and fail as an unsupported type, and a long `.html` name was read as plain text.
 */
export function storedFileName(original: string): string {
  const ext = /\.[A-Za-z0-9]{1,10}$/.exec(original)?.[0] ?? '';
  const masked = scanAndMask(original).text;
  const stem = ext && masked.endsWith(ext) ? masked.slice(0, -ext.length) : masked;
  const room = 200 - ext.length;
  // `truncate` adds an ellipsis after its cut: one less leaves room for it.
  return `${stem.length <= room ? stem : truncate(stem, room - 1)}${ext}`;
}

/**
 * Stores the uploaded bytes (the blob store enforces the size limit while reading the stream), then in one
 * transaction records the upload as `pending` and the `lore.memory.uploads` message. The file name is masked
 * like content: people name files after customers.
 */
export async function acceptUpload(
  deps: MemoryDeps,
  scope: MemoryScope,
  file: { filename: string; contentType: string; stream: Readable },
): Promise<UploadView> {
  const uploadId = newId('upl');
  const blobKey = `${scope.tenantId}/uploads/${uploadId}`;
  // Announced before the bytes, settled with the upload's row: a process stopped in between leaves bytes (unmasked)
  // that the worker's sweep deletes (runtime's blob intents; before 2026-11-30 they stayed for good).
  await announceBlob(deps.db, GRAPH_BLOB_OWNER, scope.tenantId, blobKey);
  const info = await deps.blobs.put(scope.tenantId, blobKey, file.stream, file.contentType || 'application/octet-stream', deps.config.uploadMaxBytes);
  const filename = storedFileName(file.filename || 'upload');
  const row = await deps.db.withTenant(scope.tenantId, async (sql) => {
    await openMemory(deps, sql, scope);
    await settleBlob(sql, scope.tenantId, blobKey);
    const u = await insertUpload(sql, scope.tenantId, {
      upload_id: uploadId,
      memory_id: scope.memoryId,
      workspace_id: scope.workspaceId,
      filename,
      content_type: info.contentType,
      size_bytes: info.size,
      blob_key: blobKey,
    });
    const message: MemoryUploadMessage = {
      event_id: newId('upm'),
      tenant_id: scope.tenantId,
      workspace_id: scope.workspaceId,
      memory_id: scope.memoryId,
      upload_id: uploadId,
    };
    await enqueueOutbox(sql, { topic: TOPICS.memoryUploads, key: scope.memoryId, eventId: message.event_id, value: message });
    return u;
  }).catch(async (err: unknown) => {
    // No upload row refers to the bytes (the memory was erased meanwhile, or the transaction failed): drop them.
    await deps.blobs.delete(scope.tenantId, blobKey).catch((e: unknown) => deps.logger.warn({ err: e, upload_id: uploadId }, 'could not delete the bytes of a refused upload'));
    throw err;
  });
  rememberMemory(deps, scope);
  return uploadView(row);
}

export async function getUploadView(deps: MemoryDeps, scope: MemoryScope, uploadId: string): Promise<UploadView> {
  const u = await deps.db.withTenant(scope.tenantId, (sql) => getUpload(sql, scope.tenantId, uploadId));
  if (!u || u.memory_id !== scope.memoryId) throw AppError.notFound('upload');
  return uploadView(u);
}

/**
 * Background half of an upload: extract text (OCR for images and scanned PDFs), then hand it to the same
 * ingest path as `POST /ingest` (DLP, routing, outbox) with the upload's claim in the same transaction. A file
 * that cannot be read, and any failure of extraction (a parser's exception, a worker thread that dies or times
 * out), ends `failed` with a reason; only infrastructure errors (database, blob store) throw so the bus redelivers. The
 * uploaded bytes are deleted once the upload is settled, so unmasked content is kept only while it waits.
 */
export async function processUpload(
  deps: MemoryDeps,
  msg: MemoryUploadMessage,
  eventId: string,
): Promise<'accepted' | 'duplicate' | 'missing' | 'failed' | 'erased'> {
  const upload = await deps.db.withTenant(msg.tenant_id, (sql) => getUpload(sql, msg.tenant_id, msg.upload_id));
  if (!upload) return 'missing';
  if (upload.status !== 'pending' && upload.status !== 'extracting') {
    // Processed before (a redelivery, perhaps after a crash between the commit and the deletion below).
    await deps.blobs.delete(msg.tenant_id, upload.blob_key);
    return 'duplicate';
  }
  await deps.db.withTenant(msg.tenant_id, (sql) => setUploadStatus(sql, msg.tenant_id, upload.upload_id, 'extracting'));
  const blob = await deps.blobs.get(msg.tenant_id, upload.blob_key);
  if (!blob) {
    await fail(deps, msg, eventId, 'the uploaded file is gone');
    return 'failed';
  }
  const kind = detectKind(upload.filename, upload.content_type, blob.data);
  let extracted;
  try {
    if (!kind) throw new UnsupportedFileError('unsupported file type');
    extracted = await extractDocument(kind, blob.data, {
      ocr: deps.ocr,
      pdfTimeoutMs: deps.config.pdfTimeoutMs,
      maxPdfPages: deps.config.maxPdfPages,
      ocrBelowChars: deps.config.ocrBelowChars,
      maxOcrImages: deps.config.maxOcrImages,
      logger: deps.logger,
    });
    if (!extracted.text.trim()) throw new UnsupportedFileError('no text could be extracted from the file');
  } catch (err) {
    // Whatever a parser, an extractor or a worker thread did, it concerns this file only: the upload fails with a
    // reason and the consumer goes on (retrying would fail the same way, and hold back the uploads behind it).
    const reason = extractionFailureReason(kind, err);
    if (!(err instanceof UnsupportedFileError)) deps.logger.warn({ err, upload_id: upload.upload_id, kind, reason }, 'extracting an upload failed');
    deps.metrics.uploads.inc({ kind: kind ?? 'unknown', result: 'failed' });
    await fail(deps, msg, eventId, reason);
    await deps.blobs.delete(msg.tenant_id, upload.blob_key);
    return 'failed';
  }
  const scope: MemoryScope = { tenantId: msg.tenant_id, workspaceId: upload.workspace_id, memoryId: upload.memory_id };
  let result;
  try {
    result = await acceptDocument(
      deps,
      scope,
      { content: extracted.text, content_type: extracted.contentType, title: extracted.title ?? upload.filename, routing: { mode: 'auto' } },
      {
        source: 'upload',
        uploadId: upload.upload_id,
        // A longer extracted text keeps its first maxContentChars characters, cut after masking.
        cutToLimit: true,
        before: (sql) => claimEvent(sql, UPLOAD_CONSUMER, eventId),
        after: (sql, r) => setUploadStatus(sql, msg.tenant_id, upload.upload_id, 'indexing', { doc_id: r.doc_id, extractor: extracted.extractor, ocr: extracted.ocr }),
      },
    );
  } catch (err) {
    // A text the database refuses (class 22: data exception, 23: integrity) would be refused again on every
    // redelivery, holding back the memory's uploads behind it: the upload fails with the reason instead.
    const code = (err as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && /^2[23]/.test(code)) {
      deps.logger.warn({ err, upload_id: upload.upload_id }, 'an upload\'s text was refused by the database');
      deps.metrics.uploads.inc({ kind, result: 'failed' });
      await fail(deps, msg, eventId, `the file's text cannot be stored (${code})`);
      await deps.blobs.delete(msg.tenant_id, upload.blob_key);
      return 'failed';
    }
    if (!(err instanceof MemoryErasedError)) throw err;
    // The memory was erased while the file was being read: keep nothing of it.
    await deps.blobs.delete(msg.tenant_id, upload.blob_key);
    return 'erased';
  }
  deps.metrics.uploads.inc({ kind, result: 'accepted' });
  // The original file may hold what DLP masked: once its masked text is stored, the bytes go.
  await deps.blobs.delete(msg.tenant_id, upload.blob_key);
  return result ? 'accepted' : 'duplicate';
}

/**
 * An upload whose message was dead-lettered (docs/runtime.md, "Poison messages"): failed with `reason` unless it
 * was processed meanwhile, and its bytes dropped as every failed upload's are.
 */
export async function failDeadLetteredUpload(deps: MemoryDeps, msg: MemoryUploadMessage, eventId: string, reason: string): Promise<void> {
  const upload = await deps.db.withTenant(msg.tenant_id, (sql) => getUpload(sql, msg.tenant_id, msg.upload_id));
  if (!upload || (upload.status !== 'pending' && upload.status !== 'extracting')) return;
  await fail(deps, msg, eventId, reason);
  await deps.blobs.delete(msg.tenant_id, upload.blob_key);
}

async function fail(deps: MemoryDeps, msg: MemoryUploadMessage, eventId: string, reason: string): Promise<void> {
  await deps.db.withTenant(msg.tenant_id, async (sql) => {
    if (!(await claimEvent(sql, UPLOAD_CONSUMER, eventId))) return;
    await setUploadStatus(sql, msg.tenant_id, msg.upload_id, 'failed', { error: reason });
  });
}
