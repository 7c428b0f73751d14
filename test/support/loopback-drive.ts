import { createHash, generateKeyPairSync, verify, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The test world's Google Drive: one `node:http` server on 127.0.0.1 (random port) speaking the subset of Drive's
 * REST API (v3) and Google's OAuth 2.0 token endpoint that the `google_drive` connector source uses, so the source
 * is tested against the protocol rather than a mock of itself. See "Google Drive" under "Connector sources" in
 * docs/core.md.
 *
 * **Token endpoint** (`POST /token`, form-encoded, `drive.tokenUrl`):
 * - `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`: the assertion's RS256 signature is verified (node:crypto)
 *   with the public key of the world's service account (`drive.serviceAccountKey()`), as are `iss` (its
 *   client_email), `aud` (the token URL), `exp`/`iat` (one hour at most) and a Drive `scope`; the token acts as
 *   `sub` (domain-wide delegation), else as the client_email. Anything else: 400 `invalid_grant`.
 * - `grant_type=refresh_token`: the world's OAuth client and refresh token (`drive.oauthTokens()`); a wrong client
 *   is 401 `invalid_client`, a wrong or revoked refresh token 400 `invalid_grant`.
 * - Access tokens live `tokenTtlSeconds` (default 3600, real time) and are answered with `expires_in`;
 *   `drive.expireTokens()` ends every token issued so far. A call with a missing, unknown or expired token answers
 *   401 with Google's error body.
 *
 * **Drive** (`/drive/v3`, base `drive.url`):
 * - `GET /drive/v3/files`: `q` (a parser for `and`, `or`, `not`, parentheses and the terms `trashed = false|true`,
 *   `modifiedTime > | >= | < | <= '<RFC 3339>'`, `'<id>' in parents`, `'me' in owners`, `'<email>' in owners`,
 *   `sharedWithMe = true`, `mimeType = | != '<type>'`; anything else is 400 "Invalid Value" as Google answers),
 *   `fields` (the `files(...)` projection and `nextPageToken` are honoured), `pageSize` (default 100, 1–1000),
 *   `pageToken` (opaque, bound to the query it came from), `corpora` (`user`: files the token's user owns or that are
 *   shared with them, outside shared drives; `drive` with `driveId`; `allDrives`: both) — `drive` and `allDrives`
 *   need `supportsAllDrives=true` and `includeItemsFromAllDrives=true`, else 400, as Google requires. Without a
 *   `trashed` term, trashed files are listed, as Google does. Files come in the order they were added.
 * - `GET /drive/v3/files/{id}?alt=media`: the bytes with the file's type; a Google Docs type answers 403
 *   `fileNotDownloadable`. `GET /drive/v3/files/{id}/export?mimeType=`: Docs to `text/plain` (with the byte-order
 *   mark Google puts first), Sheets to `text/csv`, Slides to `text/plain`; other pairs 400/403. A file the user
 *   cannot see, or deleted, is 404.
 * - `GET /drive/v3/drives`: the shared drives, paginated.
 * - `drive.rateLimitNext(n, retryAfterSeconds)` makes the next `n` Drive calls answer 429 `rateLimitExceeded` with
 *   `Retry-After`; `drive.failNext(n, status, pathContains?)` the next `n` (of that path) a 5xx.
 *
 * **The world's API for tests**: `addFile({name, mimeType, content (text or bytes), owner, sharedWith, parents, driveId})` answers
 * the file (its generated id); `addFolder`, `addSharedDrive`; `change(id, {content, name})` (modifiedTime and
 * version move on), `trash(id)`, `untrash(id)`, `delete(id)`. Every mutation moves the world clock (`drive.now()`,
 * starting at `epoch`) on by a minute; modifiedTime is that clock. `requests` records every request (method, path,
 * query, status, the token's subject).
 */

export const GOOGLE_DOC = 'application/vnd.google-apps.document';
export const GOOGLE_SHEET = 'application/vnd.google-apps.spreadsheet';
export const GOOGLE_SLIDES = 'application/vnd.google-apps.presentation';
export const GOOGLE_FOLDER = 'application/vnd.google-apps.folder';

export interface LoopbackDriveOptions {
  /** The Workspace user the world's tokens belong to. Default admin@lore.example. */
  admin?: string;
  /** Lifetime of the access tokens issued. Default 3600. */
  tokenTtlSeconds?: number;
  /** Start of the world clock. Default 2026-03-02T09:00:00Z. */
  epoch?: Date | number;
}

export interface WorldFile {
  id: string;
  name: string;
  mimeType: string;
  /** Text, or the bytes of a binary file (a PDF, a DOCX). */
  content: string | Buffer;
  owner: string | null;
  sharedWith: string[];
  parents: string[];
  driveId: string | null;
  trashed: boolean;
  modifiedTime: string;
  version: number;
}

export interface NewFile {
  name: string;
  mimeType: string;
  content?: string | Buffer;
  /** Default the world's admin; ignored in a shared drive (its files have no owner). */
  owner?: string;
  sharedWith?: string[];
  parents?: string[];
  driveId?: string;
}

export interface DriveRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  status: number;
  /** The subject of the bearer token, when it was valid. */
  subject: string | null;
}

interface Token {
  subject: string;
  expiresAt: number;
}

const CLIENT_ID = 'lore-test-client.apps.googleusercontent.com';
const CLIENT_SECRET = 'lore-test-client-secret';
const DRIVE_SCOPES = ['https://www.googleapis.com/auth/drive.readonly', 'https://www.googleapis.com/auth/drive'];

export class LoopbackDrive {
  readonly admin: string;
  readonly serviceAccountEmail = 'indexer@lore-test.iam.gserviceaccount.com';
  readonly requests: DriveRequest[] = [];
  private readonly keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  private readonly privatePem: string;
  private readonly publicKey: KeyObject;
  private readonly files = new Map<string, WorldFile>();
  private readonly drives = new Map<string, string>();
  private readonly tokens = new Map<string, Token>();
  private refreshToken = 'lore-test-refresh-token';
  private readonly ttlS: number;
  private clock: number;
  private nextId = 1;
  private rateLimit = { n: 0, retryAfterS: 0 };
  private failures: { n: number; status: number; pathContains?: string | undefined } = { n: 0, status: 503 };
  private server: Server | null = null;
  private port = 0;

  constructor(options: LoopbackDriveOptions = {}) {
    this.admin = options.admin ?? 'admin@lore.example';
    this.ttlS = options.tokenTtlSeconds ?? 3600;
    this.clock = new Date(options.epoch ?? Date.UTC(2026, 2, 2, 9)).getTime();
    this.privatePem = this.keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    this.publicKey = this.keys.publicKey;
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The API base (`/drive/v3/…` is appended) and the origin of the token endpoint. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get tokenUrl(): string {
    return `${this.url}/token`;
  }

  now(): Date {
    return new Date(this.clock);
  }

  /** A service account key file as Google issues it, whose token_uri is the world's. */
  serviceAccountKey(overrides: Record<string, string> = {}): Record<string, string> {
    return {
      type: 'service_account',
      project_id: 'lore-test',
      private_key_id: 'k1',
      private_key: this.privatePem,
      client_email: this.serviceAccountEmail,
      client_id: '1234567890',
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: this.tokenUrl,
      ...overrides,
    };
  }

  /**
   * OAuth tokens of the world's admin: a valid access token (unless `token: null`) and the refresh token. No
   * `token_uri`: a credential's must be https, so the source is given `drive.tokenUrl` as its token URL instead.
   */
  oauthTokens(options: { token?: string | null } = {}): Record<string, unknown> {
    const token = options.token === undefined ? this.issue(this.admin).access_token : options.token;
    return { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, refresh_token: this.refreshToken, ...(token !== null ? { token } : {}) };
  }

  /** Every access token issued so far stops working (as an hour passing would). */
  expireTokens(): void {
    for (const t of this.tokens.values()) t.expiresAt = 0;
  }

  /** The refresh token stops working (a revoked grant). */
  revokeRefreshToken(): void {
    this.refreshToken = `revoked-${this.refreshToken}`;
  }

  rateLimitNext(n: number, retryAfterSeconds: number): void {
    this.rateLimit = { n, retryAfterS: retryAfterSeconds };
  }

  /** The next `n` Drive calls (only those whose path contains `pathContains`, when given) answer `status`. */
  failNext(n: number, status = 503, pathContains?: string): void {
    this.failures = { n, status, pathContains };
  }

  addSharedDrive(name: string): string {
    const id = `drive${this.nextId++}`;
    this.drives.set(id, name);
    return id;
  }

  addFolder(name: string, options: Omit<NewFile, 'name' | 'mimeType'> = {}): WorldFile {
    return this.addFile({ ...options, name, mimeType: GOOGLE_FOLDER });
  }

  addFile(file: NewFile): WorldFile {
    const id = `f${String(this.nextId++).padStart(4, '0')}x${createHash('sha256').update(file.name).digest('hex').slice(0, 8)}`;
    const made: WorldFile = {
      id,
      name: file.name,
      mimeType: file.mimeType,
      content: file.content ?? '',
      owner: file.driveId ? null : (file.owner ?? this.admin),
      sharedWith: file.sharedWith ?? [],
      parents: file.parents ?? [file.driveId ?? 'root'],
      driveId: file.driveId ?? null,
      trashed: false,
      modifiedTime: this.tick(),
      version: 1,
    };
    this.files.set(id, made);
    return made;
  }

  file(id: string): WorldFile {
    const f = this.files.get(id);
    if (!f) throw new Error(`no file ${id}`);
    return f;
  }

  change(id: string, change: { content?: string | Buffer; name?: string }): WorldFile {
    const f = this.file(id);
    if (change.content !== undefined) f.content = change.content;
    if (change.name !== undefined) f.name = change.name;
    f.version += 1;
    f.modifiedTime = this.tick();
    return f;
  }

  trash(id: string): void {
    const f = this.file(id);
    f.trashed = true;
    f.modifiedTime = this.tick();
  }

  untrash(id: string): void {
    const f = this.file(id);
    f.trashed = false;
    f.modifiedTime = this.tick();
  }

  delete(id: string): void {
    this.files.delete(id);
    this.tick();
  }

  /** Calls to the Drive API (not the token endpoint) so far. */
  apiRequests(): DriveRequest[] {
    return this.requests.filter((r) => r.path.startsWith('/drive/'));
  }

  private tick(): string {
    this.clock += 60_000;
    return new Date(this.clock).toISOString();
  }

  private issue(subject: string): { access_token: string; expires_in: number; token_type: string } {
    const token = `ya29.lore-${createHash('sha256').update(`${subject}:${this.tokens.size}:${Math.random()}`).digest('hex').slice(0, 24)}`;
    this.tokens.set(token, { subject, expiresAt: Date.now() + this.ttlS * 1000 });
    return { access_token: token, expires_in: this.ttlS, token_type: 'Bearer' };
  }

  // ---- HTTP ----

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const record: DriveRequest = { method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), status: 0, subject: null };
    this.requests.push(record);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      record.status = status;
      const raw = typeof body === 'string' || Buffer.isBuffer(body);
      const text = raw ? (body as string | Buffer) : JSON.stringify(body);
      res.writeHead(status, { 'content-type': raw ? (headers['content-type'] ?? 'text/plain; charset=utf-8') : 'application/json; charset=UTF-8', ...headers });
      res.end(text);
    };
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    try {
      if (url.pathname === '/token' && req.method === 'POST') return send(...(await this.token(new URLSearchParams(body))));
      if (!url.pathname.startsWith('/drive/v3/')) return send(404, googleError(404, 'notFound', 'Not Found'));
      const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const token = auth ? this.tokens.get(auth) : undefined;
      if (!token || token.expiresAt <= Date.now()) {
        return send(401, { error: { code: 401, message: 'Request had invalid authentication credentials.', errors: [{ reason: 'authError' }], status: 'UNAUTHENTICATED' } });
      }
      record.subject = token.subject;
      if (this.rateLimit.n > 0) {
        this.rateLimit.n -= 1;
        return send(429, googleError(429, 'rateLimitExceeded', 'Rate Limit Exceeded'), { 'retry-after': String(this.rateLimit.retryAfterS) });
      }
      if (this.failures.n > 0 && (this.failures.pathContains === undefined || url.pathname.includes(this.failures.pathContains))) {
        this.failures.n -= 1;
        return send(this.failures.status, googleError(this.failures.status, 'backendError', 'Backend Error'));
      }
      const [status, answer, headers] = this.drive(url, token.subject);
      return send(status, answer, headers);
    } catch (err) {
      return send(500, googleError(500, 'internalError', String(err)));
    }
  }

  private async token(form: URLSearchParams): Promise<[number, unknown]> {
    const grant = form.get('grant_type');
    if (grant === 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      try {
        const payload = verifyAssertion(form.get('assertion') ?? '', this.publicKey);
        if (payload.iss !== this.serviceAccountEmail || payload.aud !== this.tokenUrl) throw new Error('iss or aud');
        const nowS = Date.now() / 1000;
        if (typeof payload.exp !== 'number' || typeof payload.iat !== 'number' || payload.exp - payload.iat > 3600 || payload.exp < nowS || payload.iat > nowS + 60) throw new Error('lifetime');
        const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
        if (!scopes.some((sc) => DRIVE_SCOPES.includes(sc))) throw new Error('scope');
        return [200, this.issue(typeof payload.sub === 'string' ? payload.sub : this.serviceAccountEmail)];
      } catch {
        return [400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' }];
      }
    }
    if (grant === 'refresh_token') {
      if (form.get('client_id') !== CLIENT_ID || form.get('client_secret') !== CLIENT_SECRET) return [401, { error: 'invalid_client', error_description: 'Unauthorized' }];
      if (form.get('refresh_token') !== this.refreshToken) return [400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' }];
      return [200, { ...this.issue(this.admin), scope: DRIVE_SCOPES[0] }];
    }
    return [400, { error: 'unsupported_grant_type' }];
  }

  private drive(url: URL, subject: string): [number, unknown, Record<string, string>?] {
    const p = url.searchParams;
    if (url.pathname === '/drive/v3/drives') {
      const all = [...this.drives].map(([id, name]) => ({ kind: 'drive#drive', id, name }));
      const { items, next } = paginate(all, p, 'drives');
      return [200, { kind: 'drive#driveList', drives: items, ...(next ? { nextPageToken: next } : {}) }];
    }
    if (url.pathname === '/drive/v3/files') return this.list(p, subject);
    const m = /^\/drive\/v3\/files\/([^/]+)(\/export)?$/.exec(url.pathname);
    if (!m) return [404, googleError(404, 'notFound', 'Not Found')];
    const file = this.files.get(decodeURIComponent(m[1]!));
    if (!file || !this.visible(file, subject, 'allDrives')) return [404, googleError(404, 'notFound', `File not found: ${m[1]}.`)];
    if (m[2]) {
      const as = p.get('mimeType');
      const exports: Record<string, string> = { [GOOGLE_DOC]: 'text/plain', [GOOGLE_SLIDES]: 'text/plain', [GOOGLE_SHEET]: 'text/csv' };
      if (!(file.mimeType in exports)) return [403, googleError(403, 'fileNotExportable', 'Export only supports Docs Editors files.')];
      if (as !== exports[file.mimeType]) return [400, googleError(400, 'badRequest', 'The requested conversion is not supported.')];
      return [200, as === 'text/plain' ? `\uFEFF${file.content}` : file.content, { 'content-type': `${as}; charset=utf-8` }];
    }
    if (p.get('alt') !== 'media') return [200, this.project(file, 'id,name,mimeType,modifiedTime')];
    if (file.mimeType.startsWith('application/vnd.google-apps.')) return [403, googleError(403, 'fileNotDownloadable', 'Only files with binary content can be downloaded. Use Export with Docs Editors files.')];
    return [200, file.content, { 'content-type': file.mimeType.startsWith('text/') ? `${file.mimeType}; charset=utf-8` : file.mimeType }];
  }

  private list(p: URLSearchParams, subject: string): [number, unknown] {
    const corpora = p.get('corpora') ?? 'user';
    if (!['user', 'drive', 'allDrives'].includes(corpora)) return [400, googleError(400, 'invalid', 'Invalid Value')];
    const allDrives = p.get('supportsAllDrives') === 'true' && p.get('includeItemsFromAllDrives') === 'true';
    if (corpora !== 'user' && !allDrives) return [400, googleError(400, 'invalid', 'The includeItemsFromAllDrives parameter must be set to true when corpora is drive or allDrives.')];
    const driveId = p.get('driveId');
    if ((corpora === 'drive') !== (driveId !== null)) return [400, googleError(400, 'invalid', 'driveId goes with corpora=drive')];
    if (driveId !== null && !this.drives.has(driveId)) return [404, googleError(404, 'notFound', `Shared drive not found: ${driveId}`)];
    let match: (f: WorldFile) => boolean;
    try {
      match = parseQuery(p.get('q') ?? '', subject);
    } catch {
      return [400, googleError(400, 'invalid', 'Invalid Value')];
    }
    const pageSize = Number(p.get('pageSize') ?? '100');
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) return [400, googleError(400, 'invalid', 'Invalid Value')];
    const found = [...this.files.values()].filter((f) => (driveId !== null ? f.driveId === driveId : this.visible(f, subject, corpora)) && match(f));
    const { items, next, error } = paginate(found, p, 'files');
    if (error) return [400, googleError(400, 'invalid', 'Invalid Value')];
    const fields = p.get('fields') ?? 'files(id,name,mimeType)';
    const inner = /files\((.*)\)/.exec(fields)?.[1] ?? 'id,name,mimeType';
    return [200, { files: items.map((f) => this.project(f, inner)), ...(next && /nextPageToken/.test(fields) ? { nextPageToken: next } : {}) }];
  }

  private visible(f: WorldFile, subject: string, corpora: string): boolean {
    const mine = f.driveId === null && (f.owner === subject || f.sharedWith.includes(subject));
    if (corpora === 'user') return mine;
    return mine || f.driveId !== null;
  }

  /** The file as Drive answers it, with only the fields asked for (`owners(emailAddress)` counts as `owners`). */
  private project(f: WorldFile, fields: string): Record<string, unknown> {
    const full: Record<string, unknown> = {
      id: f.id,
      name: f.name,
      mimeType: f.mimeType,
      modifiedTime: f.modifiedTime,
      webViewLink: `https://docs.google.com/lore-test/${f.id}/view`,
      parents: f.parents,
      trashed: f.trashed,
      version: String(f.version),
      ...(f.owner ? { owners: [{ kind: 'drive#user', emailAddress: f.owner, displayName: f.owner.split('@')[0] }] } : {}),
      ...(f.driveId ? { driveId: f.driveId } : {}),
      ...(!f.mimeType.startsWith('application/vnd.google-apps.') ? { md5Checksum: createHash('md5').update(f.content).digest('hex'), size: String(Buffer.byteLength(f.content)) } : {}),
    };
    const names = topLevelFields(fields);
    return Object.fromEntries(Object.entries(full).filter(([k]) => names.has(k)));
  }
}

/** A compact JWS signed RS256 with `key`: its claims, or an error (header, signature, encoding). */
function verifyAssertion(jwt: string, key: KeyObject): Record<string, unknown> {
  const parts = jwt.split('.');
  if (parts.length !== 3) throw new Error('not a JWS');
  const [h, p, sig] = parts as [string, string, string];
  const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg?: unknown };
  if (header.alg !== 'RS256') throw new Error('alg');
  if (!verify('sha256', Buffer.from(`${h}.${p}`), key, Buffer.from(sig, 'base64url'))) throw new Error('signature');
  return JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
}

function googleError(code: number, reason: string, message: string) {
  return { error: { code, message, errors: [{ domain: 'global', reason, message }] } };
}

/** A page of `items` by `pageSize` and an opaque `pageToken` (bound to `what` and the query it continues). */
function paginate<T>(items: T[], p: URLSearchParams, what: string): { items: T[]; next: string | null; error?: true } {
  const size = Number(p.get('pageSize') ?? '100');
  const key = createHash('sha256').update(`${what}|${p.get('q') ?? ''}|${p.get('corpora') ?? ''}|${p.get('driveId') ?? ''}`).digest('hex').slice(0, 12);
  let start = 0;
  const token = p.get('pageToken');
  if (token) {
    const [k, at] = Buffer.from(token, 'base64url').toString().split(':');
    if (k !== key || !/^\d+$/.test(at ?? '')) return { items: [], next: null, error: true };
    start = Number(at);
  }
  const page = items.slice(start, start + size);
  const end = start + page.length;
  return { items: page, next: end < items.length ? Buffer.from(`${key}:${end}`).toString('base64url') : null };
}

function topLevelFields(fields: string): Set<string> {
  const names = new Set<string>();
  let depth = 0;
  let current = '';
  for (const ch of `${fields},`) {
    if (ch === '(') depth += 1;
    if (ch === ')') depth -= 1;
    if (ch === ',' && depth === 0) {
      names.add(current.replace(/\(.*$/, '').trim());
      current = '';
    } else current += ch;
  }
  return names;
}

// ---- the q language (the subset the source speaks) ----

type QToken = { t: 'str'; v: string } | { t: 'word'; v: string } | { t: 'op'; v: string } | { t: 'paren'; v: '(' | ')' };

function tokenize(q: string): QToken[] {
  const out: QToken[] = [];
  let i = 0;
  while (i < q.length) {
    const ch = q[i]!;
    if (/\s/.test(ch)) i += 1;
    else if (ch === '(' || ch === ')') {
      out.push({ t: 'paren', v: ch });
      i += 1;
    } else if (ch === "'") {
      let v = '';
      i += 1;
      while (i < q.length && q[i] !== "'") {
        if (q[i] === '\\') i += 1;
        v += q[i] ?? '';
        i += 1;
      }
      if (q[i] !== "'") throw new Error('unterminated string');
      i += 1;
      out.push({ t: 'str', v });
    } else if (/[=!<>]/.test(ch)) {
      const m = /^(!=|>=|<=|=|<|>)/.exec(q.slice(i));
      if (!m) throw new Error('operator');
      out.push({ t: 'op', v: m[1]! });
      i += m[1]!.length;
    } else {
      const m = /^[A-Za-z_]+/.exec(q.slice(i));
      if (!m) throw new Error(`unexpected ${ch}`);
      out.push({ t: 'word', v: m[0] });
      i += m[0].length;
    }
  }
  return out;
}

/** A matcher for a Drive query; throws on anything outside the subset (Google's 400 "Invalid Value"). */
function parseQuery(q: string, subject: string): (f: WorldFile) => boolean {
  const tokens = tokenize(q);
  if (tokens.length === 0) return () => true;
  let at = 0;
  const peek = () => tokens[at];
  const take = () => {
    const t = tokens[at++];
    if (!t) throw new Error('unexpected end');
    return t;
  };
  const isWord = (t: QToken | undefined, v: string) => t?.t === 'word' && t.v.toLowerCase() === v;
  const orExpr = (): ((f: WorldFile) => boolean) => {
    let left = andExpr();
    while (isWord(peek(), 'or')) {
      take();
      const l = left;
      const r = andExpr();
      left = (f) => l(f) || r(f);
    }
    return left;
  };
  const andExpr = (): ((f: WorldFile) => boolean) => {
    let left = unary();
    while (isWord(peek(), 'and')) {
      take();
      const l = left;
      const r = unary();
      left = (f) => l(f) && r(f);
    }
    return left;
  };
  const unary = (): ((f: WorldFile) => boolean) => {
    const t = peek();
    if (isWord(t, 'not')) {
      take();
      const inner = unary();
      return (f) => !inner(f);
    }
    if (t?.t === 'paren' && t.v === '(') {
      take();
      const inner = orExpr();
      const close = take();
      if (close.t !== 'paren' || close.v !== ')') throw new Error('missing )');
      return inner;
    }
    return term();
  };
  const term = (): ((f: WorldFile) => boolean) => {
    const first = take();
    if (first.t === 'str') {
      if (!isWord(take(), 'in')) throw new Error('expected in');
      const field = take();
      const value = first.v === 'me' ? subject : first.v;
      if (isWord(field, 'parents')) return (f) => f.parents.includes(value);
      if (isWord(field, 'owners')) return (f) => f.owner === value;
      throw new Error('unsupported collection');
    }
    if (first.t !== 'word') throw new Error('expected a field');
    const op = take();
    const value = take();
    if (op.t !== 'op') throw new Error('expected an operator');
    const field = first.v;
    if (field === 'trashed' || field === 'sharedWithMe') {
      if (value.t !== 'word' || !['true', 'false'].includes(value.v) || (op.v !== '=' && op.v !== '!=')) throw new Error('boolean');
      const want = (value.v === 'true') === (op.v === '=');
      return field === 'trashed' ? (f) => f.trashed === want : (f) => f.driveId === null && f.sharedWith.includes(subject) === want;
    }
    if (value.t !== 'str') throw new Error('expected a string');
    if (field === 'mimeType') {
      if (op.v !== '=' && op.v !== '!=') throw new Error('mimeType op');
      return (f) => (f.mimeType === value.v) === (op.v === '=');
    }
    if (field === 'modifiedTime') {
      const bound = Date.parse(value.v);
      if (!Number.isFinite(bound) || op.v === '!=' || op.v === '=') throw new Error('date');
      const cmp: Record<string, (a: number) => boolean> = { '>': (a) => a > bound, '>=': (a) => a >= bound, '<': (a) => a < bound, '<=': (a) => a <= bound };
      return (f) => cmp[op.v]!(Date.parse(f.modifiedTime));
    }
    throw new Error(`unsupported field ${field}`);
  };
  const matcher = orExpr();
  if (at !== tokens.length) throw new Error('trailing tokens');
  return matcher;
}
