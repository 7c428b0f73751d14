import { checkConnectorConfig, checkCredentialJson, inputTypesOf, isSource } from './sources';

const paths = (r: ReturnType<typeof checkConnectorConfig>) => (r.ok ? [] : r.issues.map((i) => i.path.join('.')));

const serviceAccount = {
  type: 'service_account',
  project_id: 'acme-drive',
  client_email: 'indexer@acme-drive.iam.gserviceaccount.com',
  private_key: '-----BEGIN PRIVATE KEY-----\nMIIE...\n-----END PRIVATE KEY-----\n',
};

describe('connector sources', () => {
  it('knows web, file and google_drive, and the input types of each', () => {
    expect(['web', 'file', 'google_drive'].every(isSource)).toBe(true);
    expect(isSource('slack')).toBe(false);
    expect(isSource(3)).toBe(false);
    expect(inputTypesOf('web')).toEqual(['load_state']);
    expect(inputTypesOf('file')).toEqual(['load_state']);
    expect(inputTypesOf('google_drive')).toEqual(['poll', 'load_state']);
  });

  it('web: an http(s) base_url without a user name or password, and one of three crawl types', () => {
    expect(checkConnectorConfig('web', { base_url: ' https://docs.acme.example/start ', web_connector_type: 'recursive' })).toEqual({
      ok: true,
      value: { base_url: 'https://docs.acme.example/start', web_connector_type: 'recursive' },
    });
    expect(checkConnectorConfig('web', { base_url: 'http://intranet/wiki', web_connector_type: 'sitemap' }).ok).toBe(true);
    expect(paths(checkConnectorConfig('web', { base_url: 'ftp://files.acme.example', web_connector_type: 'single' }))).toEqual(['base_url']);
    expect(paths(checkConnectorConfig('web', { base_url: 'not a url', web_connector_type: 'single' }))).toEqual(['base_url']);
    expect(paths(checkConnectorConfig('web', { base_url: 'https://bob:hunter2@acme.example', web_connector_type: 'single' }))).toEqual(['base_url']);
    expect(paths(checkConnectorConfig('web', { base_url: 'https://acme.example', web_connector_type: 'deep' }))).toEqual(['web_connector_type']);
    expect(paths(checkConnectorConfig('web', {})).sort()).toEqual(['base_url', 'web_connector_type']);
    expect(paths(checkConnectorConfig('web', { base_url: 'https://acme.example', web_connector_type: 'single', depth: 3 }))).toEqual(['']);
  });

  it('file: at least one file location', () => {
    expect(checkConnectorConfig('file', { file_locations: ['uploads/a.pdf'] }).ok).toBe(true);
    expect(paths(checkConnectorConfig('file', { file_locations: [] }))).toEqual(['file_locations']);
    expect(paths(checkConnectorConfig('file', { file_locations: ['ok', ''] }))).toEqual(['file_locations.1']);
    expect(paths(checkConnectorConfig('file', {}))).toEqual(['file_locations']);
  });

  it('google_drive: {} reads every drive the credential reaches; narrowing fields are typed', () => {
    expect(checkConnectorConfig('google_drive', {}).ok).toBe(true);
    expect(checkConnectorConfig('google_drive', { include_shared_drives: true, shared_folder_urls: ['https://drive.google.com/drive/folders/abc'], my_drive_emails: ['ann@acme.example'] }).ok).toBe(true);
    expect(paths(checkConnectorConfig('google_drive', { shared_folder_urls: ['http://drive.google.com/x'], my_drive_emails: ['ann'] })).sort()).toEqual(['my_drive_emails.0', 'shared_folder_urls.0']);
  });

  it('web and file credentials hold nothing', () => {
    expect(checkCredentialJson('web', {})).toEqual({ ok: true, value: {} });
    expect(checkCredentialJson('file', { token: 'x' }).ok).toBe(false);
  });

  it('google_drive credentials: a service account key or OAuth tokens, with the primary admin', () => {
    expect(checkCredentialJson('google_drive', { google_service_account_key: serviceAccount, google_primary_admin: 'admin@acme.example' }).ok).toBe(true);
    expect(checkCredentialJson('google_drive', { google_tokens: { client_id: 'c', client_secret: 's', refresh_token: 'r' }, google_primary_admin: 'admin@acme.example' }).ok).toBe(true);

    const none = checkCredentialJson('google_drive', { google_primary_admin: 'admin@acme.example' });
    expect(none.ok ? null : none.issues).toEqual([{ path: [], message: expect.stringContaining('google_service_account_key') }]);
    const notServiceAccount = checkCredentialJson('google_drive', { google_service_account_key: { ...serviceAccount, type: 'authorized_user' }, google_primary_admin: 'admin@acme.example' });
    expect(paths(notServiceAccount)).toEqual(['google_service_account_key.type']);
    const noAdmin = checkCredentialJson('google_drive', { google_tokens: { client_id: 'c', client_secret: 's' } });
    expect(paths(noAdmin).sort()).toEqual(['google_primary_admin', 'google_tokens.refresh_token']);
    const both = checkCredentialJson('google_drive', { google_service_account_key: serviceAccount, google_tokens: {}, google_primary_admin: 'admin@acme.example' });
    expect(both.ok).toBe(false);
  });
});
