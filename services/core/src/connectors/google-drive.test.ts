import { contentPlan, driveIdFromUrl, FOLDER_MIME, listQuery, planListings, quote, retryAfterMs, unchangedByListing, validatorsOf, type DriveFile } from './google-drive';

const ADMIN = 'admin@lore.example';

describe('what a configuration reads', () => {
  test('{} is every drive the credential reaches, in one listing', () => {
    expect(planListings({}, ADMIN, true)).toEqual({ ok: true, everySharedDrive: false, listings: [{ subject: ADMIN, corpora: 'allDrives', conditions: [] }] });
  });

  test('a flag set to false leaves its part out; a flag set to true reads only its part', () => {
    expect(planListings({ include_shared_drives: false }, ADMIN, true)).toEqual({
      ok: true,
      everySharedDrive: false,
      listings: [
        { subject: ADMIN, corpora: 'user', conditions: ["'me' in owners"] },
        { subject: ADMIN, corpora: 'user', conditions: ['sharedWithMe = true'] },
      ],
    });
    expect(planListings({ include_my_drives: true }, ADMIN, true)).toEqual({ ok: true, everySharedDrive: false, listings: [{ subject: ADMIN, corpora: 'user', conditions: ["'me' in owners"] }] });
    expect(planListings({ include_shared_drives: true }, ADMIN, true)).toEqual({ ok: true, everySharedDrive: true, listings: [] });
  });

  test('URLs and addresses read exactly those', () => {
    const plan = planListings(
      {
        shared_drive_urls: ['https://drive.google.com/drive/folders/0ADrive'],
        shared_folder_urls: ['https://drive.google.com/drive/u/1/folders/1Folder_x-y'],
        my_drive_emails: ['a@lore.example'],
        specific_user_emails: ['b@lore.example'],
      },
      ADMIN,
      true,
    );
    expect(plan).toEqual({
      ok: true,
      everySharedDrive: false,
      listings: [
        { subject: ADMIN, corpora: 'drive', driveId: '0ADrive', conditions: [] },
        { subject: ADMIN, corpora: 'allDrives', conditions: [], folder: '1Folder_x-y' },
        { subject: 'a@lore.example', corpora: 'user', conditions: ["'me' in owners"] },
        { subject: 'b@lore.example', corpora: 'allDrives', conditions: [] },
      ],
    });
  });

  test("other users' drives need a service account; a URL without an id is refused", () => {
    expect(planListings({ my_drive_emails: ['a@lore.example'] }, ADMIN, false)).toMatchObject({ ok: false });
    expect(planListings({ my_drive_emails: [ADMIN] }, ADMIN, false)).toMatchObject({ ok: true });
    expect(planListings({ shared_folder_urls: ['https://drive.google.com/drive/my-drive'] }, ADMIN, true)).toEqual({ ok: false, detail: 'a shared_folder_urls entry names no folder' });
  });

  test('Drive URLs', () => {
    expect(driveIdFromUrl('https://drive.google.com/drive/folders/abc_DEF-1')).toBe('abc_DEF-1');
    expect(driveIdFromUrl('https://drive.google.com/drive/folders/abc/')).toBe('abc');
    expect(driveIdFromUrl('https://drive.google.com/open?id=xyz')).toBe('xyz');
    expect(driveIdFromUrl("https://drive.google.com/open?id=x' or '1")).toBeNull();
    expect(driveIdFromUrl('not a url')).toBeNull();
  });
});

describe('queries', () => {
  test('not trashed, the conditions, the folder, the poll bound', () => {
    expect(listQuery({ conditions: [] }, null)).toBe('trashed = false');
    expect(listQuery({ conditions: ["'me' in owners"] }, new Date('2026-03-02T09:00:00Z'))).toBe("trashed = false and 'me' in owners and modifiedTime > '2026-03-02T09:00:00.000Z'");
    expect(listQuery({ conditions: [] }, null, 'F1')).toBe("trashed = false and 'F1' in parents");
    expect(listQuery({ conditions: [] }, new Date(0), 'F1')).toBe(`trashed = false and 'F1' in parents and (mimeType = '${FOLDER_MIME}' or modifiedTime > '1970-01-01T00:00:00.000Z')`);
  });

  test('literals are escaped', () => {
    expect(quote("it's a \\ test")).toBe("'it\\'s a \\\\ test'");
  });
});

describe('content', () => {
  test('Docs and Slides exported as text, Sheets as CSV; text, PDF, DOCX and JSON downloaded for the extractor; images only with OCR; the rest skipped', () => {
    expect(contentPlan('application/vnd.google-apps.document')).toEqual({ kind: 'export', as: 'text/plain' });
    expect(contentPlan('application/vnd.google-apps.presentation')).toEqual({ kind: 'export', as: 'text/plain' });
    expect(contentPlan('application/vnd.google-apps.spreadsheet')).toEqual({ kind: 'export', as: 'text/csv' });
    expect(contentPlan('text/plain')).toEqual({ kind: 'media', whole: false });
    expect(contentPlan('text/markdown')).toEqual({ kind: 'media', whole: false });
    expect(contentPlan('text/html')).toEqual({ kind: 'media', whole: false });
    expect(contentPlan('text/csv')).toEqual({ kind: 'media', whole: false });
    expect(contentPlan('application/pdf')).toEqual({ kind: 'media', whole: true });
    expect(contentPlan('application/json')).toEqual({ kind: 'media', whole: true });
    expect(contentPlan('application/vnd.openxmlformats-officedocument.wordprocessingml.document')).toEqual({ kind: 'media', whole: true });
    expect(contentPlan('application/vnd.openxmlformats-officedocument.presentationml.presentation')).toMatchObject({ kind: 'skip' });
    expect(contentPlan('image/png')).toEqual({ kind: 'skip', detail: 'image/png (no OCR engine)' });
    expect(contentPlan('image/png', true)).toEqual({ kind: 'media', whole: true });
    expect(contentPlan('application/vnd.google-apps.form')).toEqual({ kind: 'skip', detail: 'application/vnd.google-apps.form' });
  });
});

describe('change detection', () => {
  const file: DriveFile = { id: 'a', modifiedTime: '2026-03-02T09:00:00.000Z', md5Checksum: 'abc', version: '3' };

  test('validators: modifiedTime and the checksum, else the version', () => {
    expect(validatorsOf(file, 'h')).toEqual({ hash: 'h', lastModified: '2026-03-02T09:00:00.000Z', etag: 'md5:abc' });
    expect(validatorsOf({ id: 'b', modifiedTime: 't', version: '7' }, 'h')).toEqual({ hash: 'h', lastModified: 't', etag: 'version:7' });
    expect(validatorsOf({ id: 'c' }, 'h')).toEqual({ hash: 'h' });
  });

  test('unchanged only when both modifiedTime and checksum match what was kept', () => {
    const kept = validatorsOf(file, 'h');
    expect(unchangedByListing(file, kept)).toBe(true);
    expect(unchangedByListing({ ...file, modifiedTime: '2026-03-02T10:00:00.000Z' }, kept)).toBe(false);
    expect(unchangedByListing({ ...file, md5Checksum: 'def' }, kept)).toBe(false);
    expect(unchangedByListing(file, undefined)).toBe(false);
    expect(unchangedByListing(file, { hash: 'h' })).toBe(false);
  });

  test('Retry-After: seconds or a date, bounded below by now', () => {
    expect(retryAfterMs('2', 0)).toBe(2000);
    expect(retryAfterMs(new Date(5000).toUTCString(), 1000)).toBe(4000);
    expect(retryAfterMs(new Date(0).toUTCString(), 1000)).toBe(0);
    expect(retryAfterMs(undefined, 0)).toBeNull();
    expect(retryAfterMs('soon', 0)).toBeNull();
  });
});
