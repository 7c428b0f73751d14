import { parseContentType } from '@lore/outbound';
import type { BlobStore, Db, Logger } from '@lore/runtime';
import { readFileText, type FileReading } from '../connectors/file-text';
import { cleanFileName, DEFAULT_PROJECT_FILE_LIMITS, failureReason, type ProjectFileLimits } from '../domain/project-files';
import { countTokensYielding } from '../domain/tokens';
import {
  claimExpiredProjectFileJobs,
  countProjectFiles,
  deleteProjectFile,
  dropProjectFileJob,
  getProjectFile,
  insertProjectFiles,
  listProjectFiles,
  lockProcessingFile,
  lockProjectForFiles,
  renewProjectFileLease,
  settleProjectFile,
  type NewProjectFile,
  type ProjectFileRow,
} from '../store/project-files';
import type { CoreDeps } from './context';
import { coreError } from './errors';
import type { Principal } from './principal';
import { storeUpload, type UploadPart } from './uploads';

/**
 * Chat project files (docs/core.md, "Project files"): an upload stores each file's bytes in the blob store and
 * records the files as `processing` with an extraction job, in one transaction; the process that accepted them
 * extracts their text right after (the shared extractor, bounded concurrency), and any core process's sweep takes
 * over a job whose process stopped. A settled file keeps its text and loses its bytes.
 */

export interface ProjectFileSettings {
  limits: ProjectFileLimits;
  /** Files extracted at once by one process. */
  concurrency: number;
  /** How long a process may work on a file before another takes it over (a crashed or stopped process). */
  leaseMs: number;
  /** How often each process looks for files whose process stopped. */
  sweepIntervalMs: number;
  /** Attempts at one file before it fails for good (a file that stops its process each time). */
  maxAttempts: number;
}

export const DEFAULT_PROJECT_FILE_SETTINGS: ProjectFileSettings = {
  limits: DEFAULT_PROJECT_FILE_LIMITS,
  concurrency: 2,
  // Longer than the extractor's own limits (60 s a PDF or DOCX) with room for the queue ahead of the file.
  leaseMs: 120_000,
  sweepIntervalMs: 30_000,
  maxAttempts: 3,
};

/** Settings from the defaults and what a deployment sets. */
export function projectFileSettings(given: { limits?: Partial<ProjectFileLimits> } & Partial<Omit<ProjectFileSettings, 'limits'>> = {}): ProjectFileSettings {
  const { limits, ...rest } = given;
  return { ...DEFAULT_PROJECT_FILE_SETTINGS, ...rest, limits: { ...DEFAULT_PROJECT_FILE_LIMITS, ...limits } };
}

const notFound = () => coreError('NOT_FOUND', 'chat project not found');
const fileNotFound = () => coreError('NOT_FOUND', 'project file not found');

/** The blob key of a file's bytes (the tenant's namespace; derived from the ids, so a sweep finds them without a row). */
export function projectFileBlobKey(tenantId: string, fileId: string): string {
  return `${tenantId}/project-files/${fileId}`;
}

/**
 * Stores the files of one upload and records them, answering their statuses (`processing`). The project is
 * checked before any byte is read; each file may hold `maxFileBytes`, all of them `maxUploadBytes`; the project's
 * file count is checked under its row lock. On any refusal the bytes stored so far are deleted.
 */
export async function uploadProjectFiles(deps: CoreDeps, p: Principal, projectId: number, parts: AsyncIterable<UploadPart>): Promise<ProjectFileRow[]> {
  const { limits } = deps.projectFiles.settings;
  const exists = await deps.db.withTenant(p.tenantId, (sql) => lockProjectForFiles(sql, p.tenantId, p.owner, projectId, false));
  if (!exists) throw notFound();
  return storeUpload(deps, p.tenantId, parts, { limits, keyOf: (fileId) => projectFileBlobKey(p.tenantId, fileId), nameOf: cleanFileName }, async (files) => {
    const stored: NewProjectFile[] = files.map((f) => ({ file_id: f.id, name: f.name, content_type: f.contentType, size_bytes: f.size }));
    const rows = await deps.db.withTenant(p.tenantId, async (sql) => {
      if (!(await lockProjectForFiles(sql, p.tenantId, p.owner, projectId, true))) throw notFound();
      const held = await countProjectFiles(sql, p.tenantId, projectId);
      if (held + stored.length > limits.maxFilesPerProject) {
        throw coreError('CONFLICT', `a project holds at most ${limits.maxFilesPerProject} files; this one has ${held}`);
      }
      return insertProjectFiles(sql, p.tenantId, projectId, p.owner, stored, deps.projectFiles.settings.leaseMs);
    });
    for (const r of rows) deps.projectFiles.runner.enqueue(p.tenantId, r.file_id);
    return rows;
  });
}

export { tooManyFiles } from './uploads';

/** The caller's files of the project (all, or those named), oldest first; someone else's project is 404. */
export async function projectFilesOf(deps: CoreDeps, p: Principal, projectId: number, fileIds: string[] | null): Promise<ProjectFileRow[]> {
  return deps.db.withTenant(p.tenantId, async (sql) => {
    if (!(await lockProjectForFiles(sql, p.tenantId, p.owner, projectId, false))) throw notFound();
    return listProjectFiles(sql, p.tenantId, p.owner, projectId, fileIds);
  });
}

export async function projectFileOf(deps: CoreDeps, p: Principal, projectId: number, fileId: string): Promise<ProjectFileRow> {
  const row = await deps.db.withTenant(p.tenantId, (sql) => getProjectFile(sql, p.tenantId, p.owner, projectId, fileId));
  if (!row) throw fileNotFound();
  return row;
}

/** Deletes the file (its text, and its bytes if it was still processing). */
export async function removeProjectFile(deps: CoreDeps, p: Principal, projectId: number, fileId: string): Promise<void> {
  const removed = await deps.db.withTenant(p.tenantId, (sql) => deleteProjectFile(sql, p.tenantId, p.owner, projectId, fileId));
  if (!removed) throw fileNotFound();
  await deps.blobs.delete(p.tenantId, projectFileBlobKey(p.tenantId, fileId));
}

export interface ProjectFileRunnerDeps {
  db: Db;
  blobs: BlobStore;
  logger: Logger;
  settings: ProjectFileSettings;
  /** The extractor's limits and OCR engine (core: none, so images fail as a type that cannot be read). */
  reading: FileReading;
}

/**
 * Extracts project files in this process: those this process accepted (at once) and those a sweep takes over
 * (their lease ran out: the process that had them stopped). At most `concurrency` at a time; a failure of the
 * database or the blob store leaves the job to be taken over after its lease, a file that cannot be read fails.
 */
export class ProjectFileRunner {
  private readonly queue: Array<{ tenantId: string; fileId: string }> = [];
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private sweeping = false;
  private closed = false;

  constructor(private readonly deps: ProjectFileRunnerDeps) {}

  /** Sweeps once now, then every `sweepIntervalMs`. */
  start(): void {
    if (this.timer || this.closed) return;
    void this.sweep();
    this.timer = setInterval(() => void this.sweep(), this.deps.settings.sweepIntervalMs);
    this.timer.unref();
  }

  enqueue(tenantId: string, fileId: string): void {
    if (this.closed) return;
    this.queue.push({ tenantId, fileId });
    this.pump();
  }

  /** Takes over files whose lease ran out; a file tried `maxAttempts` times fails. Answers how many it took. */
  async sweep(): Promise<number> {
    if (this.sweeping || this.closed) return 0;
    this.sweeping = true;
    try {
      const { settings } = this.deps;
      const room = settings.concurrency * 2 - this.queue.length - this.inFlight.size;
      if (room <= 0) return 0;
      const jobs = await claimExpiredProjectFileJobs(this.deps.db, settings.leaseMs, room);
      for (const job of jobs) {
        if (job.attempts > settings.maxAttempts) await this.giveUp(job.tenant_id, job.file_id, job.attempts - 1);
        else this.enqueue(job.tenant_id, job.file_id);
      }
      return jobs.length;
    } catch (err) {
      this.deps.logger.warn({ err }, 'the project file sweep failed; it runs again');
      return 0;
    } finally {
      this.sweeping = false;
    }
  }

  /** Stops taking files and waits for those in flight. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.queue.length = 0;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Waits until nothing is queued or running (tests). */
  async idle(): Promise<void> {
    while (this.queue.length > 0 || this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private pump(): void {
    while (!this.closed && this.inFlight.size < this.deps.settings.concurrency && this.queue.length > 0) {
      const job = this.queue.shift()!;
      const run: Promise<void> = this.extract(job.tenantId, job.fileId)
        .catch((err: unknown) => this.deps.logger.warn({ err, tenant_id: job.tenantId, file_id: job.fileId }, 'extracting a project file failed; another attempt follows its lease'))
        .finally(() => {
          this.inFlight.delete(run);
          this.pump();
        });
      this.inFlight.add(run);
    }
  }

  private async extract(tenantId: string, fileId: string): Promise<void> {
    const { db, blobs, settings } = this.deps;
    const key = projectFileBlobKey(tenantId, fileId);
    await renewProjectFileLease(db, tenantId, fileId, settings.leaseMs);
    const file = await db.withTenant(tenantId, (sql) => lockProcessingFile(sql, tenantId, fileId));
    if (!file) {
      // Deleted (with its project, perhaps) or settled by another process meanwhile.
      await dropProjectFileJob(db, tenantId, fileId);
      await blobs.delete(tenantId, key);
      return;
    }
    const blob = await blobs.get(tenantId, key);
    let outcome: Parameters<typeof settleProjectFile>[3];
    if (!blob) outcome = { status: 'failed', error: 'the uploaded file is gone' };
    else {
      const { contentType, charset } = parseContentType(file.content_type);
      const read = await readFileText({ name: file.name, contentType, charset, data: blob.data }, settings.limits.maxTextBytes, this.deps.reading);
      outcome = read.ok ? { status: 'completed', text: read.text, token_count: await countTokensYielding(read.text), extractor: read.extractor } : { status: 'failed', error: failureReason(read.reason, read.detail) };
    }
    await db.withTenant(tenantId, (sql) => settleProjectFile(sql, tenantId, fileId, outcome));
    // The text is what answers use: the bytes go once the file is settled.
    await blobs.delete(tenantId, key);
  }

  private async giveUp(tenantId: string, fileId: string, tried: number): Promise<void> {
    this.deps.logger.warn({ tenant_id: tenantId, file_id: fileId, attempts: tried }, 'a project file failed every attempt');
    await this.deps.db.withTenant(tenantId, (sql) => settleProjectFile(sql, tenantId, fileId, { status: 'failed', error: `the file could not be processed (${tried} attempts)` }));
    await this.deps.blobs.delete(tenantId, projectFileBlobKey(tenantId, fileId));
  }
}
