import type { Db, Sql } from '@lore/runtime';

/** A chat project's file (migrations/0006_project_files.sql), without its text. */
export interface ProjectFileRow {
  file_id: string;
  project_id: number;
  name: string;
  content_type: string;
  size_bytes: number;
  status: 'processing' | 'completed' | 'failed';
  error: string | null;
  extractor: string | null;
  token_count: number | null;
  time_created: Date;
  time_updated: Date;
}

const COLS = `f.file_id::text AS file_id, f.project_id, f.name, f.content_type, f.size_bytes::int AS size_bytes, f.status, f.error, f.extractor,
  f.token_count, f.time_created, f.time_updated`;

export interface NewProjectFile {
  file_id: string;
  name: string;
  content_type: string;
  size_bytes: number;
}

/**
 * Whether the owner's project exists; `lock` takes its row lock (FOR UPDATE), under which an upload counts the
 * project's files, so two uploads cannot both pass the limit.
 */
export async function lockProjectForFiles(sql: Sql, tenantId: string, owner: string, projectId: number, lock: boolean): Promise<boolean> {
  const r = await sql.query(`SELECT 1 FROM core.chat_projects WHERE tenant_id = $1 AND owner = $2 AND project_id = $3${lock ? ' FOR UPDATE' : ''}`, [tenantId, owner, projectId]);
  return r.rowCount > 0;
}

/** The project's files, counted under the project's row lock (taken by the caller). */
export async function countProjectFiles(sql: Sql, tenantId: string, projectId: number): Promise<number> {
  const r = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM core.chat_project_files WHERE tenant_id = $1 AND project_id = $2`, [tenantId, projectId]);
  return r.rows[0]?.n ?? 0;
}

/**
 * Records uploaded files as `processing` with their extraction jobs (leased to this process until `leaseMs` from
 * now), in the caller's transaction.
 */
export async function insertProjectFiles(sql: Sql, tenantId: string, projectId: number, owner: string, files: NewProjectFile[], leaseMs: number): Promise<ProjectFileRow[]> {
  const r = await sql.query<ProjectFileRow>(
    `WITH f AS (
       INSERT INTO core.chat_project_files (tenant_id, file_id, project_id, owner, name, content_type, size_bytes)
       SELECT $1, (x.v->>'file_id')::uuid, $2, $3, x.v->>'name', x.v->>'content_type', (x.v->>'size_bytes')::bigint
         FROM jsonb_array_elements($4::jsonb) WITH ORDINALITY AS x(v, n)
        ORDER BY x.n
       RETURNING *
     ), j AS (
       INSERT INTO core.project_file_jobs (tenant_id, file_id, lease_until)
       SELECT $1, f.file_id, now() + make_interval(secs => $5::float8 / 1000) FROM f
     )
     SELECT ${COLS} FROM f ORDER BY f.seq`,
    [tenantId, projectId, owner, JSON.stringify(files), leaseMs],
  );
  return r.rows;
}

/** The owner's files of the project (oldest first), optionally only those named. */
export async function listProjectFiles(sql: Sql, tenantId: string, owner: string, projectId: number, fileIds: string[] | null): Promise<ProjectFileRow[]> {
  const r = await sql.query<ProjectFileRow>(
    `SELECT ${COLS} FROM core.chat_project_files f
      WHERE f.tenant_id = $1 AND f.owner = $2 AND f.project_id = $3 AND ($4::uuid[] IS NULL OR f.file_id = ANY($4::uuid[]))
      ORDER BY f.seq`,
    [tenantId, owner, projectId, fileIds],
  );
  return r.rows;
}

export async function getProjectFile(sql: Sql, tenantId: string, owner: string, projectId: number, fileId: string): Promise<ProjectFileRow | null> {
  const r = await sql.query<ProjectFileRow>(
    `SELECT ${COLS} FROM core.chat_project_files f WHERE f.tenant_id = $1 AND f.owner = $2 AND f.project_id = $3 AND f.file_id = $4`,
    [tenantId, owner, projectId, fileId],
  );
  return r.rows[0] ?? null;
}

/** Deletes the owner's file and its job; true when there was one. */
export async function deleteProjectFile(sql: Sql, tenantId: string, owner: string, projectId: number, fileId: string): Promise<boolean> {
  const r = await sql.query(`DELETE FROM core.chat_project_files WHERE tenant_id = $1 AND owner = $2 AND project_id = $3 AND file_id = $4`, [tenantId, owner, projectId, fileId]);
  await sql.query(`DELETE FROM core.project_file_jobs WHERE tenant_id = $1 AND file_id = $2`, [tenantId, fileId]);
  return r.rowCount > 0;
}

/** What the extraction needs of a file still `processing`, locked; null when it is settled or gone. */
export async function lockProcessingFile(sql: Sql, tenantId: string, fileId: string): Promise<{ name: string; content_type: string } | null> {
  const r = await sql.query<{ name: string; content_type: string }>(
    `SELECT name, content_type FROM core.chat_project_files WHERE tenant_id = $1 AND file_id = $2 AND status = 'processing' FOR UPDATE`,
    [tenantId, fileId],
  );
  return r.rows[0] ?? null;
}

/** Settles a `processing` file (its text, or why it failed) and drops its job, in one transaction. */
export async function settleProjectFile(
  sql: Sql,
  tenantId: string,
  fileId: string,
  outcome: { status: 'completed'; text: string; token_count: number; extractor: string } | { status: 'failed'; error: string },
): Promise<void> {
  if (outcome.status === 'completed') {
    await sql.query(
      `UPDATE core.chat_project_files SET status = 'completed', text = $3, token_count = $4, extractor = $5, error = NULL, time_updated = now()
        WHERE tenant_id = $1 AND file_id = $2 AND status = 'processing'`,
      [tenantId, fileId, outcome.text, outcome.token_count, outcome.extractor],
    );
  } else {
    await sql.query(
      `UPDATE core.chat_project_files SET status = 'failed', error = $3, time_updated = now() WHERE tenant_id = $1 AND file_id = $2 AND status = 'processing'`,
      [tenantId, fileId, outcome.error],
    );
  }
  await sql.query(`DELETE FROM core.project_file_jobs WHERE tenant_id = $1 AND file_id = $2`, [tenantId, fileId]);
}

/** Drops a job whose file is gone or settled. */
export async function dropProjectFileJob(db: Pick<Db, 'query'>, tenantId: string, fileId: string): Promise<void> {
  await db.query(`DELETE FROM core.project_file_jobs WHERE tenant_id = $1 AND file_id = $2`, [tenantId, fileId]);
}

/** Extends a job's lease as its extraction starts (across tenants: the queue has no row-level security). */
export async function renewProjectFileLease(db: Pick<Db, 'query'>, tenantId: string, fileId: string, leaseMs: number): Promise<void> {
  await db.query(`UPDATE core.project_file_jobs SET lease_until = now() + make_interval(secs => $3::float8 / 1000) WHERE tenant_id = $1 AND file_id = $2`, [
    tenantId,
    fileId,
    leaseMs,
  ]);
}

/**
 * Takes over jobs whose lease ran out (the process that had them stopped, or failed mid-way), at most `limit`,
 * leasing them to the caller and counting the attempt; a second process skips what the first takes.
 */
export async function claimExpiredProjectFileJobs(
  db: Pick<Db, 'query'>,
  leaseMs: number,
  limit: number,
): Promise<Array<{ tenant_id: string; file_id: string; attempts: number }>> {
  const r = await db.query<{ tenant_id: string; file_id: string; attempts: number }>(
    `UPDATE core.project_file_jobs j SET lease_until = now() + make_interval(secs => $1::float8 / 1000), attempts = j.attempts + 1
       FROM (SELECT tenant_id, file_id FROM core.project_file_jobs WHERE lease_until < now() ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) d
      WHERE j.tenant_id = d.tenant_id AND j.file_id = d.file_id
      RETURNING j.tenant_id, j.file_id::text AS file_id, j.attempts`,
    [leaseMs, limit],
  );
  return r.rows;
}

/** The project's completed files a chat turn reads, oldest first, without their text (which a cache may hold). */
export async function projectFileHeads(sql: Sql, tenantId: string, projectId: number, maxFiles: number): Promise<Array<{ file_id: string; name: string; time_updated: Date }>> {
  const r = await sql.query<{ file_id: string; name: string; time_updated: Date }>(
    `SELECT file_id::text AS file_id, name, time_updated FROM core.chat_project_files
      WHERE tenant_id = $1 AND project_id = $2 AND status = 'completed'
      ORDER BY seq LIMIT $3`,
    [tenantId, projectId, maxFiles],
  );
  return r.rows;
}

/** These files' text for a chat turn: each file's beginning, at most `maxChars` of it. */
export async function projectFileTextsOf(sql: Sql, tenantId: string, fileIds: readonly string[], maxChars: number): Promise<Map<string, string>> {
  const r = await sql.query<{ file_id: string; text: string }>(
    `SELECT file_id::text AS file_id, left(text, $3) AS text FROM core.chat_project_files WHERE tenant_id = $1 AND file_id = ANY($2::uuid[]) AND status = 'completed'`,
    [tenantId, [...fileIds], maxChars],
  );
  return new Map(r.rows.map((row) => [row.file_id, row.text]));
}
