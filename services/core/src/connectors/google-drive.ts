import { OutboundError, OutboundHttpClient, TargetGuard, type HostLookup, type OutboundResponse } from '@lore/outbound';
import { checkConnectorConfig, checkCredentialJson } from '../domain/sources';
import { DEFAULT_FILE_READING, readFileText, type FileReading } from './file-text';
import { GOOGLE_TOKEN_URL, isFresh, isServiceAccount, readTokenAnswer, tokenRequestBody, tokenUrlOf, type AccessToken, type GoogleCredential } from './google-auth';
import { ConnectorRun, StopRun } from './run';
import { contentHash, idsOf, itemsOf, timerDelay, type ConnectorSource, type IdListing, type ListOptions, type PreviousState, type RunEvent, type RunOptions, type RunOutcome, type SourceRun, type Validators } from './source';

/**
 * The `google_drive` connector source: Google Drive's REST API (v3) through the shared outbound client
 * (`@lore/outbound`: the SSRF guard on every call, bounded size and time), for the API and the token endpoint alike.
 *
 * - **Auth** (`google-auth.ts`): a service account key mints tokens with the JWT bearer grant, acting as the
 *   credential's `google_primary_admin` (or, for `my_drive_emails` / `specific_user_emails`, as each of those users:
 *   domain-wide delegation); OAuth tokens are used until they expire or a call answers 401, then refreshed.
 * - **What is read** (`planListings`): `{}` is every drive the credential reaches (an `include_*` flag set to false
 *   leaves its part out); otherwise exactly what the configuration names — My Drive, files shared with the user,
 *   every shared drive (`drives.list`), the shared drives and folders (walked into their subfolders) of the URLs,
 *   the drives of the addresses. A file met twice is read once.
 * - **Content**: Google Docs and Slides exported as text/plain, Sheets as text/csv (Drive exports a spreadsheet's
 *   first sheet); every type memory uploads read (text, Markdown, HTML, CSV, JSON, PDF, DOCX; images only with an
 *   OCR engine) downloaded and read with the platform's one extractor (`file-text.ts`, `@lore/extract`); other types
 *   (other office formats, archives …) skipped (`unsupported_type`). A PDF, DOCX, JSON or image larger than the
 *   extractor reads is skipped (`too_large`) without a download when the listing gives its size.
 * - **Polls** list with `modifiedTime > since` and skip a file whose modifiedTime and checksum (or version) are the
 *   ones the last run kept, or whose text hashes the same; **listings** name every live (not trashed) file.
 *
 * 429 and 5xx are retried (`Retry-After` honoured up to `maxRetryDelayMs`; a longer one gives up), as are timeouts
 * and network errors. See "Google Drive" under "Connector sources" in docs/core.md.
 */

export interface GoogleDriveSourceConfig {
  include_shared_drives?: boolean;
  include_my_drives?: boolean;
  include_files_shared_with_me?: boolean;
  shared_drive_urls?: string[];
  shared_folder_urls?: string[];
  my_drive_emails?: string[];
  specific_user_emails?: string[];
}

/** The guard and client a Drive source calls Google with (one per indexer process). */
export interface GoogleDriveFetcher {
  guard: TargetGuard;
  client: OutboundHttpClient;
  close(): void;
}

export interface GoogleDriveFetcherOptions {
  userAgent?: string;
  /** Loopback addresses and `localhost` names become reachable (tests); private ranges stay refused. Off by default. */
  allowLoopback?: boolean;
  lookup?: HostLookup;
}

export function createGoogleDriveFetcher(options: GoogleDriveFetcherOptions = {}): GoogleDriveFetcher {
  const guard = new TargetGuard({ allowLoopback: options.allowLoopback ?? false, ...(options.lookup ? { lookup: options.lookup } : {}) });
  const client = new OutboundHttpClient({ guard, userAgent: options.userAgent ?? 'LoreBot/1', maxSocketsPerOrigin: 4 });
  return { guard, client, close: () => client.close() };
}

export interface GoogleDriveSourceOptions {
  /** The API's origin; `/drive/v3/…` is appended. Default Google's. */
  apiBaseUrl?: string;
  /** The token endpoint for a credential that names none (a key file's or the tokens' `token_uri` wins). */
  tokenUrl?: string;
  /** Files per listing page (1–1,000). */
  pageSize?: number;
  /** Listing pages requested at most per run (files and shared drives); the run stops with `max_pages`. */
  maxListPages?: number;
  /** One request's time limit (the run's remaining time limits it too). */
  requestTimeoutMs?: number;
  /** Retries of one request after a 429, a 5xx, a timeout or a network error. */
  maxRetries?: number;
  /** First backoff when the answer names no Retry-After; doubled each retry. */
  retryBaseMs?: number;
  /** The longest wait honoured: a longer Retry-After gives up on the request. */
  maxRetryDelayMs?: number;
  /** The clock (ms since the epoch), for token lifetimes and assertions. */
  now?: () => number;
  /** How downloaded files are read: the extractor's limits and OCR engine (default: the memory uploads' limits, no OCR). */
  reading?: FileReading;
}

export const GOOGLE_DRIVE_DEFAULTS = {
  apiBaseUrl: 'https://www.googleapis.com',
  tokenUrl: GOOGLE_TOKEN_URL,
  pageSize: 100,
  maxListPages: 10_000,
  requestTimeoutMs: 60_000,
  maxRetries: 4,
  retryBaseMs: 500,
  maxRetryDelayMs: 60_000,
} as const;

export const FOLDER_MIME = 'application/vnd.google-apps.folder';
/** What a listing asks for of each file. */
export const FILE_FIELDS = 'nextPageToken, files(id, name, mimeType, modifiedTime, webViewLink, owners(emailAddress), md5Checksum, version, size, parents, trashed)';

/** A file as `files.list` answers it (the fields asked for). */
export interface DriveFile {
  id: string;
  name?: string;
  mimeType?: string;
  modifiedTime?: string;
  webViewLink?: string;
  owners?: Array<{ emailAddress?: string }>;
  md5Checksum?: string;
  version?: string;
  /** Bytes of a file with binary content (Google's own types have none), as a decimal string. */
  size?: string;
  parents?: string[];
  trashed?: boolean;
}

// ---- pure parts ----

/**
 * `export`: Drive converts it; `media`: downloaded and read by the extractor — `whole` files (PDF, DOCX, JSON,
 * images) up to the extractor's file limit, the others (text of any kind) up to the document byte limit.
 */
export type ContentPlan = { kind: 'export'; as: 'text/plain' | 'text/csv' } | { kind: 'media'; whole: boolean } | { kind: 'skip'; detail: string };

const EXPORTS: Record<string, 'text/plain' | 'text/csv'> = {
  'application/vnd.google-apps.document': 'text/plain',
  'application/vnd.google-apps.presentation': 'text/plain',
  'application/vnd.google-apps.spreadsheet': 'text/csv',
};
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const WHOLE = new Set(['application/pdf', DOCX, 'application/json']);

/** How a file of this type becomes text, or why it does not; images only when an OCR engine reads them. */
export function contentPlan(mimeType: string, ocr = false): ContentPlan {
  const exportAs = EXPORTS[mimeType];
  if (exportAs) return { kind: 'export', as: exportAs };
  if (mimeType.startsWith('text/') || mimeType === 'application/xhtml+xml') return { kind: 'media', whole: false };
  if (WHOLE.has(mimeType)) return { kind: 'media', whole: true };
  if (mimeType.startsWith('image/')) return ocr ? { kind: 'media', whole: true } : { kind: 'skip', detail: `${mimeType} (no OCR engine)` };
  return { kind: 'skip', detail: mimeType || 'no type' };
}

/** One `files.list` walk: whose token, which corpus, which conditions; a folder walk descends into subfolders. */
export interface Listing {
  /** The user the calls act as (a service account's `sub`); the credential's own user for OAuth. */
  subject: string;
  corpora: 'user' | 'drive' | 'allDrives';
  driveId?: string;
  /** Conditions joined with `and` (besides `trashed = false` and, in a poll, the modifiedTime bound). */
  conditions: string[];
  /** The folder whose descendants are read. */
  folder?: string;
}

export type ListingPlan = { ok: true; listings: Listing[]; everySharedDrive: boolean } | { ok: false; detail: string };

/** What a configuration reads, as listings (`everySharedDrive`: one listing per drive `drives.list` names). */
export function planListings(config: GoogleDriveSourceConfig, primaryAdmin: string, serviceAccount: boolean): ListingPlan {
  // Nothing chosen (no URL, no address, no flag set to true): every drive the credential reaches, less what a
  // flag set to false leaves out. Something chosen: exactly that.
  const chosen =
    [config.shared_drive_urls, config.shared_folder_urls, config.my_drive_emails, config.specific_user_emails].some((l) => (l?.length ?? 0) > 0) ||
    [config.include_my_drives, config.include_files_shared_with_me, config.include_shared_drives].some((f) => f === true);
  const flag = (v: boolean | undefined) => v ?? !chosen;
  const myDrives = flag(config.include_my_drives);
  const sharedWithMe = flag(config.include_files_shared_with_me);
  const sharedDrives = flag(config.include_shared_drives);
  const listings: Listing[] = [];
  const others = [...(config.my_drive_emails ?? []), ...(config.specific_user_emails ?? [])].filter((e) => e.toLowerCase() !== primaryAdmin.toLowerCase());
  if (others.length > 0 && !serviceAccount) return { ok: false, detail: "reading other users' drives (my_drive_emails, specific_user_emails) needs a service account with domain-wide delegation" };
  let everySharedDrive = false;
  if (myDrives && sharedWithMe && sharedDrives) listings.push({ subject: primaryAdmin, corpora: 'allDrives', conditions: [] });
  else {
    if (myDrives) listings.push({ subject: primaryAdmin, corpora: 'user', conditions: ["'me' in owners"] });
    if (sharedWithMe) listings.push({ subject: primaryAdmin, corpora: 'user', conditions: ['sharedWithMe = true'] });
    everySharedDrive = sharedDrives;
  }
  for (const url of config.shared_drive_urls ?? []) {
    const id = driveIdFromUrl(url);
    if (id === null) return { ok: false, detail: 'a shared_drive_urls entry names no shared drive' };
    listings.push({ subject: primaryAdmin, corpora: 'drive', driveId: id, conditions: [] });
  }
  for (const url of config.shared_folder_urls ?? []) {
    const id = driveIdFromUrl(url);
    if (id === null) return { ok: false, detail: 'a shared_folder_urls entry names no folder' };
    listings.push({ subject: primaryAdmin, corpora: 'allDrives', conditions: [], folder: id });
  }
  for (const email of config.my_drive_emails ?? []) listings.push({ subject: email, corpora: 'user', conditions: ["'me' in owners"] });
  for (const email of config.specific_user_emails ?? []) listings.push({ subject: email, corpora: 'allDrives', conditions: [] });
  return { ok: true, listings, everySharedDrive };
}

/** The folder or shared drive id of a Drive URL (`…/drive/folders/<id>`, `…/drive/u/0/folders/<id>`, `…?id=<id>`). */
export function driveIdFromUrl(url: string): string | null {
  if (!URL.canParse(url)) return null;
  const u = new URL(url);
  const fromPath = /\/folders\/([A-Za-z0-9_-]+)\/?$/.exec(u.pathname)?.[1];
  const id = fromPath ?? u.searchParams.get('id');
  return id && /^[A-Za-z0-9_-]{1,200}$/.test(id) ? id : null;
}

/** A Drive query string literal. */
export function quote(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The `q` of one listing page: not trashed, the listing's conditions, its folder, the poll's modifiedTime bound. */
export function listQuery(listing: Pick<Listing, 'conditions'>, since: Date | null, folder?: string): string {
  const parts = ['trashed = false', ...listing.conditions];
  if (folder !== undefined) parts.push(`${quote(folder)} in parents`);
  if (since !== null) {
    const bound = `modifiedTime > ${quote(since.toISOString())}`;
    // A folder walk must still meet the (unchanged) subfolders that hold changed files.
    parts.push(folder !== undefined ? `(mimeType = ${quote(FOLDER_MIME)} or ${bound})` : bound);
  }
  return parts.join(' and ');
}

/** A Retry-After header in ms (delta-seconds or an HTTP date), or null when absent or unreadable. */
export function retryAfterMs(header: string | string[] | undefined, nowMs: number): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : null;
}

/** What to keep for the next poll: modifiedTime and the checksum (or, for Google's own types, the version). */
export function validatorsOf(file: DriveFile, hash: string): Validators {
  const v: Validators = { hash };
  if (file.modifiedTime) v.lastModified = file.modifiedTime;
  const tag = file.md5Checksum ? `md5:${file.md5Checksum}` : file.version ? `version:${file.version}` : undefined;
  if (tag) v.etag = tag;
  return v;
}

/** The listing alone says the file is the one the last run indexed: no download. */
export function unchangedByListing(file: DriveFile, previous: Validators | undefined): boolean {
  if (!previous?.lastModified || !previous.etag) return false;
  const now = validatorsOf(file, previous.hash);
  return now.lastModified === previous.lastModified && now.etag === previous.etag;
}

// ---- the source ----

type Mode = 'load' | 'poll' | 'list';
type Event = RunEvent;

/** A request that failed for good (after retries), for the caller to call a skip or a failure. */
class CallFailed extends Error {
  constructor(readonly detail: string) {
    super(detail);
  }
}

export class GoogleDriveSource implements ConnectorSource {
  readonly sourceType = 'google_drive' as const;
  readonly config: GoogleDriveSourceConfig;
  readonly credential: GoogleCredential;
  readonly options: Required<GoogleDriveSourceOptions>;
  /** Access tokens per subject, kept across runs. */
  readonly tokens = new Map<string, AccessToken>();

  constructor(
    config: GoogleDriveSourceConfig,
    credential: unknown,
    readonly fetcher: GoogleDriveFetcher,
    options: GoogleDriveSourceOptions = {},
  ) {
    const checked = checkConnectorConfig('google_drive', config);
    if (!checked.ok) throw new Error(`invalid google_drive connector configuration: ${checked.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    // The credential's secrets never reach a message: only where the problem is.
    const cred = checkCredentialJson('google_drive', credential);
    if (!cred.ok) throw new Error(`invalid google_drive credential: ${cred.issues.map((i) => i.path.join('.') || '(root)').join(', ')}`);
    this.config = checked.value as GoogleDriveSourceConfig;
    this.credential = cred.value as unknown as GoogleCredential;
    this.options = {
      apiBaseUrl: (options.apiBaseUrl ?? GOOGLE_DRIVE_DEFAULTS.apiBaseUrl).replace(/\/+$/, ''),
      tokenUrl: options.tokenUrl ?? GOOGLE_DRIVE_DEFAULTS.tokenUrl,
      pageSize: Math.min(1000, Math.max(1, Math.floor(options.pageSize ?? GOOGLE_DRIVE_DEFAULTS.pageSize))),
      maxListPages: options.maxListPages ?? GOOGLE_DRIVE_DEFAULTS.maxListPages,
      requestTimeoutMs: options.requestTimeoutMs ?? GOOGLE_DRIVE_DEFAULTS.requestTimeoutMs,
      maxRetries: Math.max(0, options.maxRetries ?? GOOGLE_DRIVE_DEFAULTS.maxRetries),
      retryBaseMs: Math.max(0, options.retryBaseMs ?? GOOGLE_DRIVE_DEFAULTS.retryBaseMs),
      maxRetryDelayMs: Math.max(0, options.maxRetryDelayMs ?? GOOGLE_DRIVE_DEFAULTS.maxRetryDelayMs),
      now: options.now ?? Date.now,
      reading: options.reading ?? DEFAULT_FILE_READING,
    };
    if (!isServiceAccount(this.credential) && this.credential.google_tokens.token) {
      // A stored access token of unknown age: used until a call answers 401.
      this.tokens.set(this.credential.google_primary_admin, { token: this.credential.google_tokens.token, expiresAt: null });
    }
  }

  async *loadAll(options: RunOptions): SourceRun {
    return yield* itemsOf(new DriveRun(this, 'load', options, null, new Map()).events());
  }

  async *pollSince(since: Date, previous: PreviousState, options: RunOptions): SourceRun {
    return yield* itemsOf(new DriveRun(this, 'poll', options, since, previous).events());
  }

  async *listIds(options: ListOptions): IdListing {
    return yield* idsOf(new DriveRun(this, 'list', options, null, new Map()).events());
  }
}

interface Call {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  maxResponseBytes: number;
  truncate?: boolean;
}

/** One operation over the drives: its limits, its counts, the files it has met. */
class DriveRun extends ConnectorRun {
  private listPages = 0;
  private readonly seen = new Set<string>();

  constructor(
    private readonly source: GoogleDriveSource,
    private readonly mode: Mode,
    run: RunOptions,
    private readonly since: Date | null,
    private readonly previous: PreviousState,
  ) {
    super(run);
  }

  async *events(): AsyncGenerator<Event, RunOutcome, undefined> {
    const timer = this.deadlineTimer();
    try {
      if (this.stop) return this.outcome();
      const cred = this.source.credential;
      const plan = planListings(this.source.config, cred.google_primary_admin, isServiceAccount(cred));
      if (!plan.ok) throw new StopRun('failed', plan.detail);
      const listings = [...plan.listings];
      if (plan.everySharedDrive) {
        for (const driveId of await this.sharedDrives(cred.google_primary_admin)) {
          listings.push({ subject: cred.google_primary_admin, corpora: 'drive', driveId, conditions: [] });
        }
      }
      for (const listing of listings) {
        const folders: Array<string | undefined> = [listing.folder];
        const walked = new Set<string>(listing.folder !== undefined ? [listing.folder] : []);
        while (folders.length > 0) {
          const folder = folders.shift();
          let pageToken: string | undefined;
          do {
            const page = await this.listPage(listing, folder, pageToken);
            for (const file of page.files) {
              if (file.mimeType === FOLDER_MIME) {
                if (listing.folder !== undefined && !walked.has(file.id)) {
                  walked.add(file.id);
                  folders.push(file.id);
                }
                continue;
              }
              if (this.seen.has(file.id)) continue;
              this.seen.add(file.id);
              // A poll's folder walk lists unchanged subfolders only; their files carry the modifiedTime bound.
              const event = this.mode === 'list' ? ({ kind: 'exists', id: file.id } as const) : await this.read(file, listing.subject);
              if (event) yield* this.emit(event);
              if (this.stop) throw this.stop;
            }
            pageToken = page.nextPageToken;
          } while (pageToken);
        }
      }
      return this.outcome();
    } catch (err) {
      if (err instanceof StopRun) {
        this.halt(err);
        return this.outcome();
      }
      throw err;
    } finally {
      clearTimeout(timer);
      if (!this.stop) this.controller.abort(new StopRun('completed'));
      for (const undo of this.cleanup) undo();
    }
  }

  // ---- listing ----

  private countListPage(): void {
    if (this.listPages >= this.source.options.maxListPages) throw new StopRun('max_pages', `the listing page limit of ${this.source.options.maxListPages} was reached`);
    this.listPages += 1;
  }

  private async listPage(listing: Listing, folder: string | undefined, pageToken: string | undefined): Promise<{ files: DriveFile[]; nextPageToken?: string }> {
    this.countListPage();
    const params = new URLSearchParams({
      q: listQuery(listing, this.mode === 'poll' ? this.since : null, folder),
      fields: FILE_FIELDS,
      pageSize: String(this.source.options.pageSize),
      corpora: listing.corpora,
    });
    if (listing.corpora !== 'user') {
      params.set('supportsAllDrives', 'true');
      params.set('includeItemsFromAllDrives', 'true');
    }
    if (listing.driveId) params.set('driveId', listing.driveId);
    if (pageToken) params.set('pageToken', pageToken);
    const json = await this.listJson(`/drive/v3/files?${params}`, listing.subject, 'listing files');
    const files = Array.isArray(json.files) ? (json.files as unknown[]).filter(isDriveFile) : [];
    const next = typeof json.nextPageToken === 'string' && json.nextPageToken !== '' ? json.nextPageToken : undefined;
    return next ? { files, nextPageToken: next } : { files };
  }

  /** Every shared drive the user can reach (`drives.list`). */
  private async sharedDrives(subject: string): Promise<string[]> {
    const ids: string[] = [];
    let pageToken: string | undefined;
    do {
      this.countListPage();
      const params = new URLSearchParams({ pageSize: '100', fields: 'nextPageToken, drives(id, name)' });
      if (pageToken) params.set('pageToken', pageToken);
      const json = await this.listJson(`/drive/v3/drives?${params}`, subject, 'listing shared drives');
      for (const d of Array.isArray(json.drives) ? (json.drives as unknown[]) : []) {
        const id = (d as { id?: unknown }).id;
        if (typeof id === 'string' && id) ids.push(id);
      }
      pageToken = typeof json.nextPageToken === 'string' && json.nextPageToken !== '' ? json.nextPageToken : undefined;
    } while (pageToken);
    return ids;
  }

  /** A listing call's JSON; anything else fails the run (a listing that missed a page would prune its files). */
  private async listJson(path: string, subject: string, what: string): Promise<Record<string, unknown>> {
    let res: OutboundResponse;
    try {
      res = await this.authorized(`${this.source.options.apiBaseUrl}${path}`, subject, 8 * 1024 * 1024, false);
    } catch (err) {
      if (err instanceof CallFailed) throw new StopRun('failed', `${what} failed (${err.detail})`);
      throw err;
    }
    if (res.status < 200 || res.status >= 300) throw new StopRun('failed', `${what} answered ${res.status}${googleReason(res)}`);
    if (res.truncated) throw new StopRun('failed', `${what}: the answer is too large`);
    try {
      const json: unknown = JSON.parse(res.text());
      if (typeof json === 'object' && json !== null) return json as Record<string, unknown>;
    } catch {
      // below
    }
    throw new StopRun('failed', `${what}: the answer is not JSON`);
  }

  // ---- content ----

  /** One listed file: a document, a skip, or null (unchanged). */
  private async read(file: DriveFile, subject: string): Promise<Event | null> {
    const mimeType = file.mimeType ?? '';
    const reading = this.source.options.reading;
    const plan = contentPlan(mimeType, reading.ocr !== null);
    if (plan.kind === 'skip') return { kind: 'skipped', ref: file.id, reason: 'unsupported_type', detail: plan.detail };
    const whole = plan.kind === 'media' && plan.whole;
    if (whole && Number(file.size) > reading.maxFileBytes) return { kind: 'skipped', ref: file.id, reason: 'too_large', detail: `larger than ${reading.maxFileBytes} bytes` };
    const previous = this.previous.get(file.id);
    if (this.mode === 'poll' && unchangedByListing(file, previous)) {
      this.counts.unchanged += 1;
      return null;
    }
    const id = encodeURIComponent(file.id);
    const url =
      plan.kind === 'export'
        ? `${this.source.options.apiBaseUrl}/drive/v3/files/${id}/export?${new URLSearchParams({ mimeType: plan.as })}`
        : `${this.source.options.apiBaseUrl}/drive/v3/files/${id}?${new URLSearchParams({ alt: 'media', supportsAllDrives: 'true' })}`;
    let res: OutboundResponse;
    try {
      // A file read whole must arrive whole (a cut PDF is no PDF); text may be cut at the document limit.
      res = whole ? await this.authorized(url, subject, reading.maxFileBytes, false) : await this.authorized(url, subject, Math.max(1, this.limits.maxDocumentBytes), true);
    } catch (err) {
      if (err instanceof CallFailed) {
        if (err.detail === 'too_large') return { kind: 'skipped', ref: file.id, reason: 'too_large', detail: `larger than ${reading.maxFileBytes} bytes` };
        return { kind: 'skipped', ref: file.id, reason: 'failed', detail: err.detail };
      }
      throw err;
    }
    if (res.status === 404 || res.status === 410) return { kind: 'skipped', ref: file.id, reason: 'not_found', detail: `status ${res.status}` };
    if (res.status < 200 || res.status >= 300) return { kind: 'skipped', ref: file.id, reason: 'failed', detail: `status ${res.status}${googleReason(res)}` };
    const title = file.name ?? file.id;
    let text: string;
    let truncated = res.truncated;
    let extractor: string | null = null;
    if (plan.kind === 'export') {
      text = res.text().replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n').trim();
    } else {
      const read = await this.untilHalted(readFileText({ name: title, contentType: res.contentType ?? mimeType, charset: res.charset, data: res.body, cut: res.truncated }, this.limits.maxDocumentBytes, reading));
      if (!read.ok) return { kind: 'skipped', ref: file.id, reason: read.reason, detail: read.detail };
      ({ text, truncated, extractor } = read);
    }
    if (!text) return { kind: 'skipped', ref: file.id, reason: 'empty', detail: null };
    const hash = contentHash(title, text);
    if (this.mode === 'poll' && previous?.hash === hash) {
      this.counts.unchanged += 1;
      return null;
    }
    const metadata: Record<string, string> = { content_type: mimeType };
    if (plan.kind === 'export') metadata.exported_as = plan.as;
    if (extractor) metadata.extractor = extractor;
    if (truncated) metadata.truncated = 'true';
    const owners = (file.owners ?? []).map((o) => o.emailAddress).filter((e): e is string => typeof e === 'string' && e !== '');
    const modified = file.modifiedTime ? Date.parse(file.modifiedTime) : NaN;
    return {
      kind: 'document',
      document: {
        id: file.id,
        title,
        text,
        link: file.webViewLink ?? `https://drive.google.com/file/d/${id}/view`,
        source_type: 'google_drive',
        updated_at: Number.isFinite(modified) ? new Date(modified) : null,
        primary_owners: owners.length > 0 ? owners : null,
        secondary_owners: null,
        metadata,
        content_hash: hash,
      },
      validators: validatorsOf(file, hash),
      truncated,
    };
  }

  // ---- HTTP ----

  /** A Drive call with the subject's token; a 401 refreshes the token once and asks again. */
  private async authorized(url: string, subject: string, maxResponseBytes: number, truncate: boolean): Promise<OutboundResponse> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.accessToken(subject);
      const res = await this.send({ url, headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/*;q=0.9, */*;q=0.1' }, maxResponseBytes, truncate }, 'the Drive API');
      if (res.status !== 401 || attempt > 0) return res;
      this.source.tokens.delete(subject);
    }
  }

  /** A token for `subject`: the one kept while it is fresh, else a new one from the token endpoint. */
  private async accessToken(subject: string): Promise<string> {
    const now = this.source.options.now();
    const kept = this.source.tokens.get(subject);
    if (isFresh(kept, now)) return kept.token;
    const cred = this.source.credential;
    const tokenUrl = tokenUrlOf(cred, this.source.options.tokenUrl);
    let res: OutboundResponse;
    try {
      const body = tokenRequestBody(cred, tokenUrl, subject, Math.floor(now / 1000));
      res = await this.send({ url: tokenUrl, method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body, maxResponseBytes: 64 * 1024 }, 'the token endpoint');
    } catch (err) {
      if (err instanceof CallFailed) throw new StopRun('failed', `the token endpoint could not be reached (${err.detail})`);
      throw err;
    }
    const answer = readTokenAnswer(res.status, res.text(), this.source.options.now());
    if (!answer.ok) throw new StopRun('failed', `the token endpoint refused the credential (${answer.error})`);
    this.source.tokens.set(subject, answer.token);
    return answer.token.token;
  }

  /**
   * One request, retried after a 429, a 5xx, a timeout or a network error (Retry-After honoured when it asks for
   * no more than `maxRetryDelayMs`, else exponential backoff); a refused target fails the run at once.
   */
  private async send(call: Call, what: string): Promise<OutboundResponse> {
    const o = this.source.options;
    for (let attempt = 0; ; attempt++) {
      if (this.stop) throw this.stop;
      let res: OutboundResponse | null = null;
      let error: OutboundError | null = null;
      try {
        this.counts.requests += 1;
        res = await this.source.fetcher.client.fetch({
          url: call.url,
          method: call.method ?? 'GET',
          headers: call.headers ?? {},
          ...(call.body !== undefined ? { body: call.body } : {}),
          maxResponseBytes: call.maxResponseBytes,
          oversize: call.truncate ? 'truncate' : 'error',
          timeoutMs: this.requestTimeout(),
          signal: this.controller.signal,
        });
      } catch (err) {
        if (this.stop) throw this.stop;
        if (!(err instanceof OutboundError)) throw err;
        if (err.kind === 'refused') throw new StopRun('failed', `${what} is refused by the outbound guard`);
        if (performance.now() >= this.deadline) throw new StopRun('max_time', `the time limit of ${this.limits.maxTotalMs} ms was reached`);
        error = err;
      }
      const retriable = error ? error.kind === 'timeout' || error.kind === 'network_error' : res!.status === 429 || res!.status >= 500;
      if (!retriable || attempt >= o.maxRetries) {
        if (error) throw new CallFailed(error.kind);
        return res!;
      }
      const asked = res ? retryAfterMs(res.headers['retry-after'], Date.now()) : null;
      if (asked !== null && asked > o.maxRetryDelayMs) return res!;
      await this.sleep(asked ?? o.retryBaseMs * 2 ** attempt);
    }
  }

  private sleep(ms: number): Promise<void> {
    const signal = this.controller.signal;
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(this.stop ?? new StopRun('aborted'));
      const onAbort = () => {
        clearTimeout(t);
        reject(this.stop ?? new StopRun('aborted'));
      };
      const t = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, timerDelay(ms));
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private requestTimeout(): number {
    return Math.max(1, Math.min(this.source.options.requestTimeoutMs, Math.ceil(this.deadline - performance.now())));
  }
}

function isDriveFile(value: unknown): value is DriveFile {
  return typeof value === 'object' && value !== null && typeof (value as { id?: unknown }).id === 'string' && (value as { id: string }).id !== '';
}

/** Google's error reason (`rateLimitExceeded`, `fileNotDownloadable` …) from a JSON error body, for the record. */
function googleReason(res: OutboundResponse): string {
  try {
    const json = JSON.parse(res.text()) as { error?: { errors?: Array<{ reason?: unknown }>; status?: unknown } };
    const reason = json.error?.errors?.[0]?.reason ?? json.error?.status;
    return typeof reason === 'string' && /^[\w.-]{1,64}$/.test(reason) ? `: ${reason}` : '';
  } catch {
    return '';
  }
}
