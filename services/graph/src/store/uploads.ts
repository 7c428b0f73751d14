import type { Sql } from '@lore/runtime';

export type UploadStatus = 'pending' | 'extracting' | 'indexing' | 'completed' | 'failed';

export interface UploadRow {
  upload_id: string;
  memory_id: string;
  workspace_id: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  blob_key: string;
  status: UploadStatus;
  extractor: string | null;
  ocr: boolean;
  doc_id: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
}

interface Raw extends Omit<UploadRow, 'created_at' | 'updated_at' | 'size_bytes'> {
  size_bytes: string | number;
  created_at: Date | string;
  updated_at: Date | string;
}

function toRow(r: Raw): UploadRow {
  return { ...r, size_bytes: Number(r.size_bytes), created_at: new Date(r.created_at).toISOString(), updated_at: new Date(r.updated_at).toISOString() };
}

const COLUMNS = 'upload_id, memory_id, workspace_id, filename, content_type, size_bytes, blob_key, status, extractor, ocr, doc_id, error, created_at, updated_at';

export async function insertUpload(
  sql: Sql,
  tenantId: string,
  u: Pick<UploadRow, 'upload_id' | 'memory_id' | 'workspace_id' | 'filename' | 'content_type' | 'size_bytes' | 'blob_key'>,
): Promise<UploadRow> {
  const r = await sql.query<Raw>(
    `INSERT INTO graph.uploads (tenant_id, memory_id, workspace_id, upload_id, filename, content_type, size_bytes, blob_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [tenantId, u.memory_id, u.workspace_id, u.upload_id, u.filename, u.content_type, u.size_bytes, u.blob_key],
  );
  return toRow(r.rows[0] as Raw);
}

export async function getUpload(sql: Sql, tenantId: string, uploadId: string): Promise<UploadRow | null> {
  const r = await sql.query<Raw>(`SELECT ${COLUMNS} FROM graph.uploads WHERE tenant_id = $1 AND upload_id = $2`, [tenantId, uploadId]);
  return r.rows[0] ? toRow(r.rows[0]) : null;
}

export async function setUploadStatus(
  sql: Sql,
  tenantId: string,
  uploadId: string,
  status: UploadStatus,
  extra: { extractor?: string; ocr?: boolean; doc_id?: string; error?: string } = {},
): Promise<void> {
  await sql.query(
    `UPDATE graph.uploads SET status = $3, extractor = coalesce($4, extractor), ocr = coalesce($5, ocr), doc_id = coalesce($6, doc_id),
            error = $7, updated_at = now()
      WHERE tenant_id = $1 AND upload_id = $2`,
    [tenantId, uploadId, status, extra.extractor ?? null, extra.ocr ?? null, extra.doc_id ?? null, extra.error?.slice(0, 500) ?? null],
  );
}

/** Why an upload failed whose document was deleted before the worker indexed it. */
export const DOCUMENT_DELETED_BEFORE_INDEXING = 'the document was deleted before it was indexed';

/**
 * Ends the uploads of these documents that still wait for indexing (`indexing`) as `failed`, with
 * DOCUMENT_DELETED_BEFORE_INDEXING: their document is being deleted, so the worker will never complete them. Runs
 * in the deleting transaction, before the documents go (it finds the uploads through the documents' `upload_id`,
 * by primary key). Uploads already `completed` stay so: their document was indexed before it was deleted.
 */
export async function failUploadsOfDeletedDocuments(sql: Sql, tenantId: string, memoryId: string, docIds: readonly string[]): Promise<void> {
  await sql.query(
    `UPDATE graph.uploads u SET status = 'failed', error = $4, updated_at = now()
       FROM graph.documents d
      WHERE d.tenant_id = $1 AND d.memory_id = $2 AND d.doc_id = ANY($3::text[]) AND d.upload_id IS NOT NULL
        AND u.tenant_id = $1 AND u.upload_id = d.upload_id AND u.status = 'indexing'`,
    [tenantId, memoryId, [...docIds], DOCUMENT_DELETED_BEFORE_INDEXING],
  );
}

/**
 * The same for a document the worker finds gone (its row, and so its `upload_id`, no longer exists): the upload
 * naming it that still says `indexing`. Only the worker's rare "document missing" path runs it.
 */
export async function failUploadOfMissingDocument(sql: Sql, tenantId: string, docId: string): Promise<void> {
  await sql.query(
    `UPDATE graph.uploads SET status = 'failed', error = $3, updated_at = now()
      WHERE tenant_id = $1 AND doc_id = $2 AND status = 'indexing'`,
    [tenantId, docId, DOCUMENT_DELETED_BEFORE_INDEXING],
  );
}
