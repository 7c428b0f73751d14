import { consume, type RunOutcome, type SourceItem, type Validators } from '../../services/core/src/connectors';
import { createGoogleDriveFetcher, GoogleDriveSource, type GoogleDriveFetcher, type GoogleDriveSourceConfig, type GoogleDriveSourceOptions } from '../../services/core/src/connectors/google-drive';
import { DEFAULT_FILE_READING } from '../../services/core/src/connectors/file-text';
import { pdfWithText } from '@lore/extract/scan-pdf';
import { GOOGLE_DOC, GOOGLE_SHEET, GOOGLE_SLIDES, LoopbackDrive, type WorldFile } from '../support/loopback-drive';
import { docx } from '../memory/files';

/**
 * The `google_drive` connector source against a loopback server speaking Drive's REST API (v3) and Google's token
 * endpoint (test/support/loopback-drive.ts): a full load of a small drive, pagination, polls that yield exactly the
 * changed file, listings without trashed and deleted files, service-account token minting and OAuth refresh after
 * expiry, 429 retried after Retry-After, shared drives and folders, and the SSRF guard on the token endpoint and the
 * API. See "Google Drive" under "Connector sources" in docs/core.md.
 */

type Document = Extract<SourceItem, { kind: 'document' }>;
type Skipped = Extract<SourceItem, { kind: 'skipped' }>;

const drives: LoopbackDrive[] = [];
const fetchers: GoogleDriveFetcher[] = [];

afterAll(async () => {
  for (const f of fetchers) f.close();
  await Promise.all(drives.map((d) => d.close()));
});

async function world(options: ConstructorParameters<typeof LoopbackDrive>[0] = {}): Promise<LoopbackDrive> {
  const drive = await new LoopbackDrive(options).start();
  drives.push(drive);
  return drive;
}

function fetcher(allowLoopback = true): GoogleDriveFetcher {
  const f = createGoogleDriveFetcher({ allowLoopback });
  fetchers.push(f);
  return f;
}

interface Setup {
  config?: GoogleDriveSourceConfig;
  credential?: 'service_account' | 'oauth' | Record<string, unknown>;
  options?: GoogleDriveSourceOptions;
  allowLoopback?: boolean;
}

function source(drive: LoopbackDrive, setup: Setup = {}): GoogleDriveSource {
  const cred = setup.credential ?? 'service_account';
  const credential =
    cred === 'service_account'
      ? { google_service_account_key: drive.serviceAccountKey(), google_primary_admin: drive.admin }
      : cred === 'oauth'
        ? { google_tokens: drive.oauthTokens(), google_primary_admin: drive.admin }
        : cred;
  return new GoogleDriveSource(setup.config ?? {}, credential, fetcher(setup.allowLoopback ?? true), {
    apiBaseUrl: drive.url,
    tokenUrl: drive.tokenUrl,
    retryBaseMs: 10,
    ...setup.options,
  });
}

const run = () => ({ signal: new AbortController().signal });

async function collect(items: AsyncGenerator<SourceItem, RunOutcome, undefined>) {
  const docs: Document[] = [];
  const skipped: Skipped[] = [];
  const outcome = await consume(items, (item) => {
    if (item.kind === 'document') docs.push(item);
    else skipped.push(item);
  });
  return { docs, skipped, outcome };
}

async function ids(listing: AsyncGenerator<string, RunOutcome, undefined>) {
  const found: string[] = [];
  const outcome = await consume(listing, (id) => void found.push(id));
  return { ids: found, outcome };
}

function keep(docs: Document[]): Map<string, Validators> {
  return new Map(docs.map((d) => [d.document.id, d.validators]));
}

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const PPTX = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';

/**
 * A small drive: a doc, a sheet, slides, a text file, a Markdown file, an HTML page, a PDF and a DOCX (read), a
 * PPTX and a PNG (skipped: no extractor, no OCR engine).
 */
async function smallDrive(drive: LoopbackDrive) {
  return {
    doc: drive.addFile({ name: 'Onboarding guide', mimeType: GOOGLE_DOC, content: 'Welcome to Lore.\r\nRead the runbook first.' }),
    sheet: drive.addFile({ name: 'Budget 2026', mimeType: GOOGLE_SHEET, content: 'item,amount\nservers,1200\n' }),
    slides: drive.addFile({ name: 'Quarterly review', mimeType: GOOGLE_SLIDES, content: 'Q1 results\nRevenue up' }),
    text: drive.addFile({ name: 'notes.txt', mimeType: 'text/plain', content: 'plain notes about kafka', owner: 'ops@lore.example', sharedWith: [drive.admin] }),
    markdown: drive.addFile({ name: 'README.md', mimeType: 'text/markdown', content: '# Readme\n\nmarkdown body' }),
    html: drive.addFile({ name: 'page.html', mimeType: 'text/html', content: '<html><head><title>T</title><script>var x = 1;</script></head><body><h1>Heading</h1><p>html body text</p></body></html>' }),
    pdf: drive.addFile({ name: 'contract.pdf', mimeType: 'application/pdf', content: pdfWithText(['Service contract', 'Renewal every March.']) }),
    docx: drive.addFile({ name: 'minutes.docx', mimeType: DOCX, content: await docx(['Board minutes', 'The budget was approved.']) }),
    pptx: drive.addFile({ name: 'deck.pptx', mimeType: PPTX, content: Buffer.from([0x50, 0x4b, 3, 4]) }),
    png: drive.addFile({ name: 'photo.png', mimeType: 'image/png', content: Buffer.from([0x89, 0x50, 0x4e, 0x47]) }),
  };
}

describe('google_drive source: a full load', () => {
  test('reads docs, sheets, slides, text, Markdown, HTML, PDF and DOCX; skips a PPTX and an image with their reasons, undownloaded', async () => {
    const drive = await world();
    const f = await smallDrive(drive);
    const { docs, skipped, outcome } = await collect(source(drive).loadAll(run()));
    expect(outcome.stop).toBe('completed');
    const byId = new Map(docs.map((d) => [d.document.id, d.document]));
    expect([...byId.keys()].sort()).toEqual([f.doc, f.sheet, f.slides, f.text, f.markdown, f.html, f.pdf, f.docx].map((x) => x.id).sort());

    const doc = byId.get(f.doc.id)!;
    expect(doc).toMatchObject({ title: 'Onboarding guide', text: 'Welcome to Lore.\nRead the runbook first.', source_type: 'google_drive', primary_owners: [drive.admin], secondary_owners: null });
    expect(doc.link).toBe(`https://docs.google.com/lore-test/${f.doc.id}/view`);
    expect(doc.updated_at).toEqual(new Date(f.doc.modifiedTime));
    expect(doc.metadata).toMatchObject({ content_type: GOOGLE_DOC, exported_as: 'text/plain' });
    expect(byId.get(f.sheet.id)!.text).toBe('item,amount\nservers,1200');
    expect(byId.get(f.sheet.id)!.metadata.exported_as).toBe('text/csv');
    expect(byId.get(f.slides.id)!.text).toBe('Q1 results\nRevenue up');
    expect(byId.get(f.text.id)).toMatchObject({ text: 'plain notes about kafka', primary_owners: ['ops@lore.example'] });
    expect(byId.get(f.markdown.id)!.text).toContain('markdown body');
    const html = byId.get(f.html.id)!;
    expect(html.text).toContain('html body text');
    expect(html.text).toContain('Heading');
    expect(html.text).not.toContain('var x');
    expect(html.text).not.toContain('<p>');

    const pdf = byId.get(f.pdf.id)!;
    expect(pdf.text).toMatch(/Service contract\s+Renewal every March\./);
    expect(pdf).toMatchObject({ title: 'contract.pdf', metadata: { content_type: 'application/pdf', extractor: 'pdf' } });
    expect(byId.get(f.docx.id)).toMatchObject({ text: 'Board minutes\n\nThe budget was approved.', metadata: { content_type: DOCX, extractor: 'docx' } });

    expect(skipped).toEqual([
      { kind: 'skipped', ref: f.pptx.id, reason: 'unsupported_type', detail: PPTX },
      { kind: 'skipped', ref: f.png.id, reason: 'unsupported_type', detail: 'image/png (no OCR engine)' },
    ]);
    // The PPTX and the image were not downloaded: eight contents, one listing page, one token.
    const api = drive.apiRequests();
    expect(api.filter((r) => r.path === '/drive/v3/files')).toHaveLength(1);
    expect(api.filter((r) => r.path.includes(f.pptx.id) || r.path.includes(f.png.id))).toHaveLength(0);
    expect(api.filter((r) => r.path.endsWith('/export')).map((r) => r.query.mimeType).sort()).toEqual(['text/csv', 'text/plain', 'text/plain']);
    expect(api.filter((r) => r.query.alt === 'media')).toHaveLength(5);
    expect(outcome).toMatchObject({ yielded: 8, skipped: 2, unchanged: 0, requests: 1 + 1 + 8 });
    expect(doc.content_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  test('a PDF larger than the extractor reads is skipped from its listed size, undownloaded; a damaged one is skipped as failed', async () => {
    const drive = await world();
    const big = drive.addFile({ name: 'big.pdf', mimeType: 'application/pdf', content: pdfWithText(Array.from({ length: 300 }, (_, i) => `line ${i}`.padEnd(60, '.'))) });
    const damaged = drive.addFile({ name: 'damaged.pdf', mimeType: 'application/pdf', content: Buffer.from('%PDF-1.7 the rest is missing') });
    const small = drive.addFile({ name: 'small.json', mimeType: 'application/json', content: '{"owner":"ops"}' });
    const maxFileBytes = 4_096;
    const { docs, skipped } = await collect(source(drive, { options: { reading: { ...DEFAULT_FILE_READING, maxFileBytes } } }).loadAll(run()));
    expect(docs.map((d) => [d.document.id, d.document.text])).toEqual([[small.id, 'owner: ops.']]);
    expect(skipped).toEqual([
      { kind: 'skipped', ref: big.id, reason: 'too_large', detail: `larger than ${maxFileBytes} bytes` },
      { kind: 'skipped', ref: damaged.id, reason: 'failed', detail: expect.stringContaining('PDF') },
    ]);
    expect(drive.apiRequests().filter((r) => r.path.includes(big.id))).toEqual([]);
  });

  test('the listing asks for what the source needs, not trashed, in every drive the credential reaches', async () => {
    const drive = await world();
    drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    await collect(source(drive).loadAll(run()));
    const list = drive.apiRequests().find((r) => r.path === '/drive/v3/files')!;
    expect(list.query).toMatchObject({ q: 'trashed = false', corpora: 'allDrives', supportsAllDrives: 'true', includeItemsFromAllDrives: 'true', pageSize: '100' });
    for (const field of ['id', 'name', 'mimeType', 'modifiedTime', 'webViewLink', 'owners', 'md5Checksum', 'size', 'parents']) expect(list.query.fields).toContain(field);
    expect(list.subject).toBe(drive.admin);
  });

  test('paginates with nextPageToken', async () => {
    const drive = await world();
    const made = Array.from({ length: 7 }, (_, i) => drive.addFile({ name: `file ${i}.txt`, mimeType: 'text/plain', content: `content ${i}` }));
    const { docs, outcome } = await collect(source(drive, { options: { pageSize: 3 } }).loadAll(run()));
    expect(outcome.stop).toBe('completed');
    expect(docs.map((d) => d.document.id)).toEqual(made.map((f) => f.id));
    const pages = drive.apiRequests().filter((r) => r.path === '/drive/v3/files');
    expect(pages).toHaveLength(3);
    expect(pages[0]!.query.pageToken).toBeUndefined();
    expect(pages[1]!.query.pageToken).toBeTruthy();
  });

  test('limits: documents, listing pages, the caller signal', async () => {
    const drive = await world();
    for (let i = 0; i < 5; i++) drive.addFile({ name: `f${i}.txt`, mimeType: 'text/plain', content: `body ${i}` });
    const capped = await collect(source(drive).loadAll({ ...run(), limits: { maxDocuments: 2 } }));
    expect(capped.docs).toHaveLength(2);
    expect(capped.outcome.stop).toBe('max_documents');

    const paged = await collect(source(drive, { options: { pageSize: 2, maxListPages: 2 } }).loadAll(run()));
    expect(paged.docs).toHaveLength(4);
    expect(paged.outcome.stop).toBe('max_pages');

    const controller = new AbortController();
    const seen: string[] = [];
    const outcome = await consume(source(drive).loadAll({ signal: controller.signal }), (item) => {
      if (item.kind === 'document') seen.push(item.document.id);
      controller.abort();
    });
    expect(outcome.stop).toBe('aborted');
    expect(seen).toHaveLength(1);

    // A wait (here a Retry-After) is cut by the time limit.
    drive.rateLimitNext(1, 30);
    const started = performance.now();
    const timed = await collect(source(drive).loadAll({ ...run(), limits: { maxTotalMs: 500 } }));
    expect(timed.outcome.stop).toBe('max_time');
    expect(performance.now() - started).toBeLessThan(2000);

    const cut = await collect(source(drive).loadAll({ ...run(), limits: { maxDocumentBytes: 3 } }));
    expect(cut.docs[0]!.truncated).toBe(true);
    expect(cut.docs[0]!.document.text).toBe('bod');
    expect(cut.docs[0]!.document.metadata.truncated).toBe('true');
  });
});

describe('google_drive source: polls and listings', () => {
  test('pollSince after a change yields only the changed file; an unchanged drive yields nothing and downloads nothing', async () => {
    const drive = await world();
    const f = await smallDrive(drive);
    const src = source(drive);
    const first = await collect(src.loadAll(run()));
    const kept = keep(first.docs);
    const since = drive.now();

    const before = drive.apiRequests().length;
    const quiet = await collect(src.pollSince(since, kept, run()));
    expect(quiet.docs).toEqual([]);
    expect(quiet.outcome.stop).toBe('completed');
    const quietCalls = drive.apiRequests().slice(before);
    expect(quietCalls.map((r) => r.path)).toEqual(['/drive/v3/files']);
    expect(quietCalls[0]!.query.q).toBe(`trashed = false and modifiedTime > '${since.toISOString()}'`);

    // Listed again (a since before the load): modifiedTime and checksum/version say unchanged, nothing downloaded.
    const mark = drive.apiRequests().length;
    const relisted = await collect(src.pollSince(new Date(0), kept, run()));
    expect(relisted.docs).toEqual([]);
    expect(relisted.outcome.unchanged).toBe(8);
    expect(drive.apiRequests().slice(mark).map((r) => r.path)).toEqual(['/drive/v3/files']);

    drive.change(f.sheet.id, { content: 'item,amount\nservers,1500\n' });
    const changed = await collect(src.pollSince(since, kept, run()));
    expect(changed.docs.map((d) => d.document.id)).toEqual([f.sheet.id]);
    expect(changed.docs[0]!.document.text).toContain('1500');
    expect(changed.docs[0]!.validators.lastModified).toBe(drive.file(f.sheet.id).modifiedTime);
  });

  test('a poll lists files touched since but unchanged in content (same checksum) without a new document', async () => {
    const drive = await world();
    const text = drive.addFile({ name: 'same.txt', mimeType: 'text/plain', content: 'same words' });
    const doc = drive.addFile({ name: 'Doc', mimeType: GOOGLE_DOC, content: 'doc words' });
    const src = source(drive);
    const first = await collect(src.loadAll(run()));
    const since = new Date(0);
    // Re-saved with the same words: the text file's checksum says so without a download; the doc's text hash after one.
    drive.change(text.id, { content: 'same words' });
    drive.change(doc.id, { content: 'doc words' });
    const before = drive.apiRequests().length;
    const polled = await collect(src.pollSince(since, keep(first.docs), run()));
    expect(polled.docs).toEqual([]);
    expect(polled.outcome.unchanged).toBe(2);
    const calls = drive.apiRequests().slice(before);
    expect(calls.filter((r) => r.query.alt === 'media')).toHaveLength(1);
    expect(calls.filter((r) => r.path.endsWith('/export'))).toHaveLength(1);
  });

  test('listIds names every live file and omits a trashed and a deleted one', async () => {
    const drive = await world();
    const f = await smallDrive(drive);
    const src = source(drive);
    const all = await ids(src.listIds(run()));
    expect(all.outcome.stop).toBe('completed');
    expect(all.ids.sort()).toEqual(Object.values(f).map((x: WorldFile) => x.id).sort());

    drive.trash(f.html.id);
    drive.delete(f.text.id);
    const after = await ids(src.listIds(run()));
    expect(after.outcome.stop).toBe('completed');
    expect(after.ids).not.toContain(f.html.id);
    expect(after.ids).not.toContain(f.text.id);
    expect(after.ids).toHaveLength(Object.keys(f).length - 2);
    // No content is read to list.
    expect(drive.apiRequests().filter((r) => r.path !== '/drive/v3/files')).toEqual([]);
  });

  test('a listing that keeps failing (503) fails the run rather than looking complete', async () => {
    const drive = await world();
    drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    drive.failNext(5, 503);
    const failed = await ids(source(drive, { options: { maxRetries: 1 } }).listIds(run()));
    expect(failed.outcome.stop).toBe('failed');
    expect(failed.outcome.detail).toContain('listing files answered 503');
  });
});

describe('google_drive source: what the configuration names', () => {
  test('a shared drive URL and a shared folder URL (walked into subfolders); my drive only', async () => {
    const drive = await world();
    const team = drive.addSharedDrive('Team');
    const inTeam = drive.addFile({ name: 'team.txt', mimeType: 'text/plain', content: 'team drive file', driveId: team });
    const folder = drive.addFolder('Specs');
    const sub = drive.addFolder('Old', { parents: [folder.id] });
    const inFolder = drive.addFile({ name: 'spec.txt', mimeType: 'text/plain', content: 'a spec', parents: [folder.id] });
    const inSub = drive.addFile({ name: 'old.txt', mimeType: 'text/plain', content: 'an old spec', parents: [sub.id] });
    const elsewhere = drive.addFile({ name: 'other.txt', mimeType: 'text/plain', content: 'elsewhere' });
    const shared = drive.addFile({ name: 'shared.txt', mimeType: 'text/plain', content: 'from ops', owner: 'ops@lore.example', sharedWith: [drive.admin] });

    const named = await collect(
      source(drive, { config: { shared_drive_urls: [`https://drive.google.com/drive/folders/${team}`], shared_folder_urls: [`https://drive.google.com/drive/u/0/folders/${folder.id}`] } }).loadAll(run()),
    );
    expect(named.outcome.stop).toBe('completed');
    expect(named.docs.map((d) => d.document.id).sort()).toEqual([inTeam.id, inFolder.id, inSub.id].sort());
    expect(named.docs.find((d) => d.document.id === inTeam.id)!.document.primary_owners).toBeNull();
    const driveCall = drive.apiRequests().find((r) => r.query.driveId === team)!;
    expect(driveCall.query).toMatchObject({ corpora: 'drive', supportsAllDrives: 'true', includeItemsFromAllDrives: 'true' });

    const mine = await collect(source(drive, { config: { include_my_drives: true } }).loadAll(run()));
    expect(mine.docs.map((d) => d.document.id).sort()).toEqual([inFolder.id, inSub.id, elsewhere.id].sort());
    expect(mine.docs.map((d) => d.document.id)).not.toContain(shared.id);

    const everySharedDrive = await collect(source(drive, { config: { include_shared_drives: true, include_my_drives: false, include_files_shared_with_me: false } }).loadAll(run()));
    expect(everySharedDrive.docs.map((d) => d.document.id)).toEqual([inTeam.id]);
  });

  test("a service account reads another user's My Drive as that user; OAuth tokens cannot", async () => {
    const drive = await world();
    const theirs = drive.addFile({ name: 'ops.txt', mimeType: 'text/plain', content: 'ops only', owner: 'ops@lore.example' });
    drive.addFile({ name: 'admin.txt', mimeType: 'text/plain', content: 'admin file' });
    const read = await collect(source(drive, { config: { my_drive_emails: ['ops@lore.example'] } }).loadAll(run()));
    expect(read.docs.map((d) => d.document.id)).toEqual([theirs.id]);
    expect(drive.apiRequests().every((r) => r.subject === 'ops@lore.example')).toBe(true);
    const oauth = await collect(source(drive, { credential: 'oauth', config: { my_drive_emails: ['ops@lore.example'] } }).loadAll(run()));
    expect(oauth.outcome.stop).toBe('failed');
    expect(oauth.outcome.detail).toContain('needs a service account');
  });

  test('a poll of a folder still walks unchanged subfolders to the changed file', async () => {
    const drive = await world();
    const folder = drive.addFolder('Specs');
    const sub = drive.addFolder('Deep', { parents: [folder.id] });
    const deep = drive.addFile({ name: 'deep.txt', mimeType: 'text/plain', content: 'v1', parents: [sub.id] });
    drive.addFile({ name: 'top.txt', mimeType: 'text/plain', content: 'top', parents: [folder.id] });
    const src = source(drive, { config: { shared_folder_urls: [`https://drive.google.com/drive/folders/${folder.id}`] } });
    const first = await collect(src.loadAll(run()));
    expect(first.docs).toHaveLength(2);
    const since = drive.now();
    drive.change(deep.id, { content: 'v2' });
    const polled = await collect(src.pollSince(since, keep(first.docs), run()));
    expect(polled.docs.map((d) => [d.document.id, d.document.text])).toEqual([[deep.id, 'v2']]);
  });
});

describe('google_drive source: auth', () => {
  test('a service account mints a token with a signed JWT assertion acting as the primary admin, and reuses it', async () => {
    const drive = await world();
    drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    const src = source(drive);
    await collect(src.loadAll(run()));
    await collect(src.loadAll(run()));
    const tokenCalls = drive.requests.filter((r) => r.path === '/token');
    expect(tokenCalls).toHaveLength(1);
    expect(tokenCalls[0]!.status).toBe(200);
    expect(drive.apiRequests().every((r) => r.subject === drive.admin && r.status === 200)).toBe(true);
  });

  test('a key the token endpoint does not know fails the run with its OAuth error, no secret in it', async () => {
    const drive = await world();
    const other = await world();
    drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    // Another world's key, posted to this world: the signature does not verify.
    const credential = { google_service_account_key: other.serviceAccountKey({ token_uri: drive.tokenUrl }), google_primary_admin: drive.admin };
    const { docs, outcome } = await collect(source(drive, { credential }).loadAll(run()));
    expect(docs).toEqual([]);
    expect(outcome.stop).toBe('failed');
    expect(outcome.detail).toBe('the token endpoint refused the credential (invalid_grant)');
    expect(drive.apiRequests()).toEqual([]);
  });

  test('an expired service-account token is minted again', async () => {
    const drive = await world();
    drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    const src = source(drive);
    await collect(src.loadAll(run()));
    drive.expireTokens();
    const again = await collect(src.loadAll(run()));
    expect(again.outcome.stop).toBe('completed');
    expect(again.docs).toHaveLength(1);
    expect(drive.requests.filter((r) => r.path === '/token' && r.status === 200)).toHaveLength(2);
  });

  test('OAuth: the stored token is used, then refreshed with the refresh token after it expires', async () => {
    const drive = await world();
    drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    const src = source(drive, { credential: 'oauth' });
    const first = await collect(src.loadAll(run()));
    expect(first.docs).toHaveLength(1);
    expect(drive.requests.filter((r) => r.path === '/token')).toHaveLength(0);

    drive.expireTokens();
    const second = await collect(src.loadAll(run()));
    expect(second.outcome.stop).toBe('completed');
    expect(second.docs).toHaveLength(1);
    const statuses = drive.requests.slice(-4).map((r) => `${r.path === '/token' ? 'token' : 'api'} ${r.status}`);
    expect(statuses).toEqual(['api 401', 'token 200', 'api 200', 'api 200']);

    // A token the endpoint says lives 2 s is refreshed before a call once it nears its end, without a 401 first.
    const shortLived = await world({ tokenTtlSeconds: 2 });
    shortLived.addFile({ name: 'b.txt', mimeType: 'text/plain', content: 'b' });
    const src2 = source(shortLived, { credential: { google_tokens: shortLived.oauthTokens({ token: null }), google_primary_admin: shortLived.admin } });
    await collect(src2.loadAll(run()));
    await new Promise((r) => setTimeout(r, 1100));
    await collect(src2.loadAll(run()));
    expect(shortLived.requests.filter((r) => r.path === '/token')).toHaveLength(2);
    expect(shortLived.apiRequests().every((r) => r.status === 200)).toBe(true);
  });

  test('OAuth: a revoked refresh token fails the run', async () => {
    const drive = await world();
    drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    const src = source(drive, { credential: 'oauth' });
    drive.expireTokens();
    drive.revokeRefreshToken();
    const { outcome } = await collect(src.loadAll(run()));
    expect(outcome).toMatchObject({ stop: 'failed', detail: 'the token endpoint refused the credential (invalid_grant)' });
  });
});

describe('google_drive source: retries and the SSRF guard', () => {
  test('a 429 is retried after its Retry-After', async () => {
    const drive = await world();
    drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    const src = source(drive);
    await ids(src.listIds(run())); // the token first
    drive.rateLimitNext(2, 1);
    const started = performance.now();
    const { docs, outcome } = await collect(src.loadAll(run()));
    const took = performance.now() - started;
    expect(outcome.stop).toBe('completed');
    expect(docs).toHaveLength(1);
    expect(took).toBeGreaterThanOrEqual(1900);
    expect(drive.apiRequests().filter((r) => r.status === 429)).toHaveLength(2);
  });

  test('a Retry-After longer than the bound is not waited for: the listing fails', async () => {
    const drive = await world();
    drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    drive.rateLimitNext(1, 3600);
    const started = performance.now();
    const { outcome } = await collect(source(drive, { options: { maxRetryDelayMs: 2000 } }).loadAll(run()));
    expect(performance.now() - started).toBeLessThan(2000);
    expect(outcome.stop).toBe('failed');
    expect(outcome.detail).toBe('listing files answered 429: rateLimitExceeded');
  });

  test('a 5xx on a download is retried; a download that keeps failing is skipped, the run goes on', async () => {
    const drive = await world();
    const a = drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    const b = drive.addFile({ name: 'b.txt', mimeType: 'text/plain', content: 'b' });
    const src = source(drive, { options: { maxRetries: 2 } });
    drive.failNext(2, 500, a.id);
    const retried = await collect(src.loadAll(run()));
    expect(retried.docs.map((d) => d.document.id)).toEqual([a.id, b.id]);
    drive.failNext(3, 502, a.id);
    const gaveUp = await collect(src.loadAll(run()));
    expect(gaveUp.outcome.stop).toBe('completed');
    expect(gaveUp.docs.map((d) => d.document.id)).toEqual([b.id]);
    expect(gaveUp.skipped).toEqual([{ kind: 'skipped', ref: a.id, reason: 'failed', detail: 'status 502: backendError' }]);
  });

  test('the token endpoint on loopback is refused without allowLoopback; nothing reaches it', async () => {
    const drive = await world();
    drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    const { outcome } = await collect(source(drive, { allowLoopback: false }).loadAll(run()));
    expect(outcome).toMatchObject({ stop: 'failed', detail: 'the token endpoint is refused by the outbound guard' });
    expect(drive.requests).toEqual([]);
  });

  test('an API or token endpoint on a private or metadata address is refused, loopback allowed or not', async () => {
    const drive = await world();
    drive.addFile({ name: 'a.txt', mimeType: 'text/plain', content: 'a' });
    const api = await collect(source(drive, { options: { apiBaseUrl: 'http://10.0.0.1' } }).loadAll(run()));
    expect(api.outcome).toMatchObject({ stop: 'failed', detail: 'the Drive API is refused by the outbound guard' });
    const metadata = { google_service_account_key: drive.serviceAccountKey({ token_uri: 'http://169.254.169.254/token' }), google_primary_admin: drive.admin };
    const token = await collect(source(drive, { credential: metadata }).loadAll(run()));
    expect(token.outcome).toMatchObject({ stop: 'failed', detail: 'the token endpoint is refused by the outbound guard' });
    expect(drive.apiRequests()).toEqual([]);
  });
});
