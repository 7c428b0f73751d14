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
