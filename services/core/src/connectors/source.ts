import { createHash } from 'node:crypto';
import type { Source } from '../domain/sources';

/**
 * The connector source layer: what the indexer drives to read one connector. A source knows how to read its kind
 * of place (the web, uploaded files, a drive) and nothing of Kafka, schedules or the database; the indexer keeps
 * what a run returns (documents, their validators) and hands it back to the next run. See "Connector sources" in
 * docs/core.md.
 *
 * Three operations, each an async generator whose **return value** is the run's outcome (why it stopped, counts):
 *
 * - `loadAll`: every document the source holds now.
 * - `pollSince(since, previous)`: only what changed since the last run. `previous` holds, per document id, the
 *   validators the last run returned (ETag, Last-Modified, content hash); a source uses them for conditional
 *   requests and hash comparison, so polling an unchanged source yields no document.
 * - `listIds`: the ids that still exist, for pruning. Only a listing whose outcome is `completed` is whole: a run
 *   stopped by a limit, a cancellation or a failure (the site answers 500 today) must not prune anything.
 *
 * Every operation takes a signal and limits and stops cleanly at them; `consume` drives one to its end.
 */

export interface SourceDocument {
  /** Stable per source (the web: the canonical URL). */
  id: string;
  title: string;
  text: string;
  /** Where a reader opens it. */
  link: string;
  source_type: Source;
  /** When the source says it last changed (sitemap lastmod, Last-Modified), or null when it does not say. */
  updated_at: Date | null;
  primary_owners: string[] | null;
  secondary_owners: string[] | null;
  metadata: Record<string, string>;
  /** `contentHash(title, text)`: what decides whether an already indexed document changed. */
  content_hash: string;
}

/** What the indexer keeps per document id between runs, and hands back to `pollSince` (and `listIds`). */
export interface Validators {
  /** The ETag the source answered (sent back as If-None-Match). */
  etag?: string;
  /** The Last-Modified the source answered, as sent (sent back as If-Modified-Since). */
  lastModified?: string;
  /** The document's content hash when it was indexed. */
  hash: string;
}

export type PreviousState = ReadonlyMap<string, Validators>;

/** Why something the source met is not a document of this run. */
export type SkipReason =
  /** robots.txt does not allow it (the URL or a redirect hop). */
  | 'robots'
  /** `noindex` in `<meta name="robots">` or `X-Robots-Tag`. */
  | 'noindex'
  /** Its canonical link names another page, or another page of this run has the same content. */
  | 'duplicate'
  /** A content type the source does not read (PDF, images, JSON …), or an extension that announces one. */
  | 'unsupported_type'
  /** Redirected out of what the connector reads (another origin, or outside the base URL's path). */
  | 'out_of_scope'
  /** 404, 410 or another status that is not a page. */
  | 'not_found'
  /** Nothing to index (no text). */
  | 'empty'
  /** A file that cannot be cut (PDF, DOCX, JSON, an image) is larger than the extractor reads. */
  | 'too_large'
  /** The fetch failed: refused by the SSRF guard, timeout, network error, too many redirects … */
  | 'failed';

export type SourceItem =
  | {
      kind: 'document';
      document: SourceDocument;
      /** What to keep for the next poll. */
      validators: Validators;
      /** The body was cut at `maxDocumentBytes`: the text is its beginning. */
      truncated: boolean;
    }
  | {
      kind: 'skipped';
      /** The URL or file location met. */
      ref: string;
      reason: SkipReason;
      /** The error kind or status, for the attempt's record (never an address). */
      detail: string | null;
    };

/**
 * - `completed`: the source was read to its end.
 * - `max_documents`, `max_time`, `max_pages`: a limit was reached; what was yielded is good, the rest is unread.
 * - `aborted`: the caller's signal.
 * - `failed`: the source could not be read at all (its base URL refused or unreachable, its robots.txt
 *   unreachable, its sitemap missing); `detail` says why.
 */
export type StopReason = 'completed' | 'max_documents' | 'max_time' | 'max_pages' | 'aborted' | 'failed';

export interface RunOutcome {
  stop: StopReason;
  detail: string | null;
  /** Documents (or ids, for `listIds`) yielded. */
  yielded: number;
  /** Known documents found unchanged (a 304, an old enough lastmod, the same hash). */
  unchanged: number;
  skipped: number;
  /** Requests made to the source (robots.txt not counted). */
  requests: number;
  elapsedMs: number;
}

export interface SourceLimits {
  /** Documents (or ids) yielded at most; the run then stops with `max_documents`. */
  maxDocuments: number;
  /** Body bytes read per document; a longer one is cut there and yielded as `truncated`. */
  maxDocumentBytes: number;
  /** The whole operation's wall-clock budget; the run then stops with `max_time`, cancelling what is in flight. */
  maxTotalMs: number;
}

export const DEFAULT_SOURCE_LIMITS: SourceLimits = {
  maxDocuments: 10_000,
  maxDocumentBytes: 5 * 1024 * 1024,
  maxTotalMs: 60 * 60_000,
};

export interface RunOptions {
  signal: AbortSignal;
  limits?: Partial<SourceLimits>;
}

export interface ListOptions extends RunOptions {
  /** The validators of the indexed documents, when the source can use them to list more cheaply. */
  previous?: PreviousState;
}

export type SourceRun = AsyncGenerator<SourceItem, RunOutcome, undefined>;
export type IdListing = AsyncGenerator<string, RunOutcome, undefined>;

/** What one source run yields inside: documents and skips, or (a listing) the id of something that still exists. */
export type RunEvent = SourceItem | { kind: 'exists'; id: string };

/** A run's documents and skips (a load or a poll), ending with its outcome. */
export async function* itemsOf(events: AsyncGenerator<RunEvent, RunOutcome, undefined>): SourceRun {
  for (;;) {
    const next = await events.next();
    if (next.done) return next.value;
    if (next.value.kind !== 'exists') yield next.value;
  }
}

/** A listing run's ids, ending with its outcome. */
export async function* idsOf(events: AsyncGenerator<RunEvent, RunOutcome, undefined>): IdListing {
  for (;;) {
    const next = await events.next();
    if (next.done) return next.value;
    if (next.value.kind === 'exists') yield next.value.id;
  }
}

export interface ConnectorSource {
  readonly sourceType: Source;
  loadAll(options: RunOptions): SourceRun;
  pollSince(since: Date, previous: PreviousState, options: RunOptions): SourceRun;
  listIds(options: ListOptions): IdListing;
}

export function resolveLimits(limits: Partial<SourceLimits> | undefined): SourceLimits {
  const pick = (value: number | undefined, fallback: number) => (value !== undefined && Number.isFinite(value) && value >= 0 ? Math.floor(value) : fallback);
  return {
    maxDocuments: pick(limits?.maxDocuments, DEFAULT_SOURCE_LIMITS.maxDocuments),
    maxDocumentBytes: pick(limits?.maxDocumentBytes, DEFAULT_SOURCE_LIMITS.maxDocumentBytes),
    maxTotalMs: pick(limits?.maxTotalMs, DEFAULT_SOURCE_LIMITS.maxTotalMs),
  };
}

/** The content hash of a document: its title and text, so a change elsewhere in the markup is not a change. */
export function contentHash(title: string, text: string): string {
  return createHash('sha256').update(JSON.stringify([title, text])).digest('hex');
}

/** A setTimeout delay: at least 0, and at most what a timer can hold (a longer one would fire at once). */
export function timerDelay(ms: number): number {
  return Math.min(Math.max(0, ms), 2 ** 31 - 1);
}

/** Drives a run to its end, handing each item to `onItem` (awaited: back-pressure), and answers its outcome. */
export async function consume<T>(run: AsyncGenerator<T, RunOutcome, undefined>, onItem: (item: T) => void | Promise<void>): Promise<RunOutcome> {
  for (;;) {
    const next = await run.next();
    if (next.done) return next.value;
    await onItem(next.value);
  }
}
