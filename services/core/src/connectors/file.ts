import { parseContentType } from '@lore/outbound';
import { untilAborted, type BlobStore } from '@lore/runtime';
import { checkConnectorConfig } from '../domain/sources';
import { compareContent } from './change';
import { DEFAULT_FILE_READING, readFileText, type FileReading, type FileText } from './file-text';
import {
  contentHash,
  resolveLimits,
  type ConnectorSource,
  type IdListing,
  type ListOptions,
  type PreviousState,
  type RunOptions,
  type RunOutcome,
  type SourceItem,
  type SourceRun,
  type StopReason,
  timerDelay,
} from './source';
import { plainTextTitle } from './web-page';

/** What a wait of a file run rejects with when the caller or the deadline stops it (the run then ends as it says). */
const STOPPED = () => new Error('stopped');

/**
 * The `file` connector source: the files a connector's `file_locations` name, read from the platform's blob store
 * (each location is a blob key of the tenant), read with the platform's one extractor (`file-text.ts`, `@lore/extract`):
 * every type memory uploads read — text, Markdown, HTML, CSV, JSON, PDF, DOCX — and images when an OCR engine is
 * given (none by default: images are skipped). A document's id is its location. See "Connector sources" in
 * docs/core.md.
 */

export interface FileSourceConfig {
  file_locations: string[];
}

export interface FileSourceDeps {
  blobs: BlobStore;
  tenantId: string;
  /** The extractor's limits and OCR engine (default: the memory uploads' limits, no OCR). */
  reading?: FileReading;
}

type Mode = 'load' | 'poll' | 'list';

export class FileSource implements ConnectorSource {
  readonly sourceType = 'file' as const;
  private readonly locations: string[];

  constructor(
    config: FileSourceConfig,
    private readonly deps: FileSourceDeps,
  ) {
    const checked = checkConnectorConfig('file', config);
    if (!checked.ok) throw new Error(`invalid file connector configuration: ${checked.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    this.locations = [...new Set((checked.value as unknown as FileSourceConfig).file_locations)];
  }

  loadAll(options: RunOptions): SourceRun {
    return this.items('load', options, new Map());
  }

  /** Files do not say when they changed: every file is read and compared with the hash the last run kept. */
  pollSince(_since: Date, previous: PreviousState, options: RunOptions): SourceRun {
    return this.items('poll', options, previous);
  }

  async *listIds(options: ListOptions): IdListing {
    const run = this.read('list', options, new Map());
    for (;;) {
      const next = await run.next();
      if (next.done) return next.value;
      if (next.value.kind === 'exists') yield next.value.id;
    }
  }

  private async *items(mode: Mode, options: RunOptions, previous: PreviousState): SourceRun {
    const run = this.read(mode, options, previous);
    for (;;) {
      const next = await run.next();
      if (next.done) return next.value;
      if (next.value.kind !== 'exists') yield next.value;
    }
  }

  private async *read(mode: Mode, options: RunOptions, previous: PreviousState): AsyncGenerator<SourceItem | { kind: 'exists'; id: string }, RunOutcome, undefined> {
    const limits = resolveLimits(options.limits);
    const started = performance.now();
    const counts = { yielded: 0, unchanged: 0, skipped: 0, requests: 0 };
    const end = (stop: StopReason, detail: string | null = null): RunOutcome => ({ stop, detail, ...counts, elapsedMs: Math.round(performance.now() - started) });
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), timerDelay(limits.maxTotalMs));
    /** Ends a wait when the caller cancels or the deadline passes. */
    const waits = AbortSignal.any([options.signal, deadline.signal]);
    const stopped = (): RunOutcome | null => {
      if (options.signal.aborted) return end('aborted', 'cancelled by the caller');
      if (deadline.signal.aborted) return end('max_time', `the time limit of ${limits.maxTotalMs} ms was reached`);
      return null;
    };
    try {
      for (const location of this.locations) {
        const early = stopped();
        if (early) return early;
        counts.requests += 1;
        let blob: Awaited<ReturnType<BlobStore['get']>>;
        try {
          blob = await untilAborted(this.deps.blobs.get(this.deps.tenantId, location), waits, STOPPED);
        } catch (err) {
          const halted = stopped();
          if (halted) return halted;
          // The store failing is not the file missing: the run fails, so nothing is pruned for it.
          return end('failed', `the blob store could not be read (${err instanceof Error ? err.name : 'error'})`);
        }
        if (blob === null) {
          counts.skipped += 1;
          if (mode !== 'list') yield { kind: 'skipped', ref: location, reason: 'not_found', detail: null };
          continue;
        }
        if (mode === 'list') {
          if (counts.yielded >= limits.maxDocuments) return end('max_documents', `the document limit of ${limits.maxDocuments} was reached`);
          counts.yielded += 1;
          yield { kind: 'exists', id: location };
          continue;
        }
        const { contentType, charset } = parseContentType(blob.info.contentType);
        const name = location.slice(location.lastIndexOf('/') + 1) || location;
        let read: FileText;
        try {
          // PDF and DOCX are parsed in worker threads (bounded by their own timeout); the run's limits still stop the wait.
          read = await untilAborted(readFileText({ name, contentType, charset, data: blob.data }, limits.maxDocumentBytes, this.deps.reading ?? DEFAULT_FILE_READING), waits, STOPPED);
        } catch (err) {
          const halted = stopped();
          if (halted) return halted;
          throw err;
        }
        if (!read.ok) {
          counts.skipped += 1;
          yield { kind: 'skipped', ref: location, reason: read.reason, detail: read.detail };
          continue;
        }
        const { text, truncated } = read;
        const title = read.kind === 'text' ? (plainTextTitle(text) ?? name) : (read.title ?? name);
        const hash = contentHash(title, text);
        if (mode === 'poll' && compareContent(previous.get(location), hash) === 'unchanged') {
          counts.unchanged += 1;
          continue;
        }
        if (counts.yielded >= limits.maxDocuments) return end('max_documents', `the document limit of ${limits.maxDocuments} was reached`);
        counts.yielded += 1;
        const metadata: Record<string, string> = { content_type: contentType ?? '', sha256: blob.info.sha256, extractor: read.extractor };
        if (truncated) metadata.truncated = 'true';
        yield {
          kind: 'document',
          document: {
            id: location,
            title,
            text,
            // Uploaded files are not served by a route yet: there is nothing for a reader to open.
            link: '',
            source_type: 'file',
            updated_at: blob.info.createdAt,
            primary_owners: null,
            secondary_owners: null,
            metadata,
            content_hash: hash,
          },
          validators: { hash },
          truncated,
        };
      }
      return stopped() ?? end('completed');
    } finally {
      clearTimeout(timer);
    }
  }
}
