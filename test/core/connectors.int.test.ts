/**
 * Connector administration end to end: client → gateway → core, on real PostgreSQL and Redis. Connectors,
 * credentials (sealed at rest, redacted on every read) and their pairs; spec 2's exact shapes, 422
 * `{ detail: [{ loc, msg, type }] }` for every invalid input, `{ detail }` for 400, 403 and 404.
 */
import { SEALED_PREFIX } from '@lore/runtime';
import { openCredentialJson } from '../../services/core/src/application/credential-secrets';
import { closeIdleHttpConnections } from '../support/http';
import { testSecretBox } from '../support/encryption';
import type { TenantFixture } from '../gateway/harness';
import { startCoreStack, type CoreStack } from './harness';

const STATUS_FIELDS = ['access_type', 'cc_pair_id', 'connector', 'credential', 'groups', 'name'];
const CONNECTOR_FIELDS = ['connector_specific_config', 'credential_ids', 'id', 'indexing_start', 'input_type', 'name', 'prune_freq', 'refresh_freq', 'source', 'time_created', 'time_updated'];
const CREDENTIAL_FIELDS = ['admin_public', 'credential_json', 'curator_public', 'groups', 'id', 'name', 'source', 'time_created', 'time_updated', 'user_email', 'user_id'];
const CC_PAIR_FIELDS = [
  'access_type', 'connector', 'credential', 'groups', 'id', 'in_repeated_error_state', 'indexing', 'last_index_attempt_status', 'last_pruned',
  'last_successful_index_time', 'latest_index_attempts', 'name', 'num_docs_indexed', 'number_of_index_attempts', 'status',
];
const MASK = '********';

/** Secrets that must never come back, nor reach the database in clear. */
const CLIENT_SECRET = 'gdrive-client-secret-7f3a9c';
const REFRESH_TOKEN = 'gdrive-refresh-token-51e0b2';
const PRIVATE_KEY = '-----BEGIN PRIVATE KEY-----\nMIIEvQ-sa-private-key-c41d\n-----END PRIVATE KEY-----\n';

const oauthCredential = (name: string) => ({
  name,
  source: 'google_drive',
  credential_json: { google_tokens: { client_id: 'client-1.apps.example', client_secret: CLIENT_SECRET, refresh_token: REFRESH_TOKEN }, google_primary_admin: 'admin@acme.example' },
});
const serviceAccountCredential = (name: string) => ({
  name,
  source: 'google_drive',
  credential_json: {
    google_service_account_key: { type: 'service_account', project_id: 'acme', client_email: 'indexer@acme.iam.example', private_key: PRIVATE_KEY },
    google_primary_admin: 'admin@acme.example',
  },
});
const webConnector = (name: string) => ({
  name,
  source: 'web',
  input_type: 'load_state',
  connector_specific_config: { base_url: 'https://docs.acme.example/', web_connector_type: 'recursive' },
  refresh_freq: 3600,
  prune_freq: null,
  indexing_start: null,
  access_type: 'public',
  groups: [],
});
const driveConnector = (name: string) => ({
  name,
  source: 'google_drive',
  input_type: 'poll',
  connector_specific_config: { include_shared_drives: true, shared_folder_urls: ['https://drive.google.com/drive/folders/abc'] },
  refresh_freq: 600,
  prune_freq: 86_400,
  indexing_start: '2024-01-01T00:00:00Z',
  access_type: 'private',
  groups: [3, 1],
});

type Json = Record<string, any>;

describe('core: connectors, credentials and cc pairs through the gateway', () => {
  let s: CoreStack;
  let a: TenantFixture;
  let b: TenantFixture;
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  beforeAll(async () => {
    // The indexer runs deletion attempts; its scheduler never passes on its own here (no pair is run).
    // Connector host names resolve as a public site would, except one that does not exist.
    s = await startCoreStack({
      indexer: {},
      connectorLookup: async (name) => {
        if (name.startsWith('nowhere.')) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
        if (name === 'inside.acme.example') return [{ address: '10.1.2.3', family: 4 }];
        return [{ address: '93.184.216.34', family: 4 }];
      },
    });
    a = await s.tenant();
    b = await s.tenant();
  });
  afterAll(async () => {
    await s?.close();
    closeIdleHttpConnections();
  });

  async function connector(key: string, body: Json): Promise<number> {
    const r = await s.call('POST', '/api/manage/admin/connector', as(key), body);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ id: expect.any(Number), credential_id: null });
    return r.json.id as number;
  }
  async function credential(key: string, body: Json): Promise<Json> {
    const r = await s.call('POST', '/api/manage/credential', as(key), body);
    expect(r.status).toBe(201);
    return r.json as Json;
  }
  async function associate(key: string, connectorId: number, credentialId: number, body: Json = {}): Promise<Json> {
    const r = await s.call('PUT', `/api/manage/connector/${connectorId}/credential/${credentialId}`, as(key), body);
    expect(r.status).toBe(200);
    return r.json as Json;
  }
  /** A deletion attempt runs in the indexer: waits until the pair is gone. */
  async function gone(pairId: number): Promise<void> {
    for (let i = 0; i < 200; i++) {
      if ((await s.call('GET', `/api/manage/admin/cc-pair/${pairId}`, as(a.key))).status === 404) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`cc pair ${pairId} was not deleted`);
  }
  const statuses = async (key: string, query = '') => {
    const r = await s.call('GET', `/api/manage/admin/connector/status${query}`, as(key));
    expect(r.status).toBe(200);
    return r.json as Json[];
  };

  it('creates a connector and a credential, associates them, and lists the pair with exactly the spec\'s fields', async () => {
    const connectorId = await connector(a.key, webConnector('Docs'));
    const cred = await credential(a.key, { name: 'public web', source: 'web', credential_json: {} });
    expect(Object.keys(cred).sort()).toEqual(CREDENTIAL_FIELDS);
    expect(cred).toMatchObject({ source: 'web', name: 'public web', credential_json: {}, admin_public: true, curator_public: false, groups: [], user_id: a.keyId, user_email: '' });

    // A connector without a credential is not a pair: not listed yet.
    expect((await statuses(a.key)).map((e) => e.connector.id)).not.toContain(connectorId);

    const pair = await associate(a.key, connectorId, cred.id as number);
    expect(pair).toMatchObject({ name: 'Docs', status: 'ACTIVE', access_type: 'public', groups: [] });

    const entry = (await statuses(a.key)).find((e) => e.cc_pair_id === pair.id)!;
    expect(Object.keys(entry).sort()).toEqual(STATUS_FIELDS);
    expect(Object.keys(entry.connector).sort()).toEqual(CONNECTOR_FIELDS);
    expect(Object.keys(entry.credential).sort()).toEqual(CREDENTIAL_FIELDS);
    expect(entry).toMatchObject({ name: 'Docs', access_type: 'public', groups: [] });
    expect(entry.connector).toMatchObject({
      id: connectorId,
      name: 'Docs',
      source: 'web',
      input_type: 'load_state',
      connector_specific_config: { base_url: 'https://docs.acme.example/', web_connector_type: 'recursive' },
      refresh_freq: 3600,
      prune_freq: null,
      indexing_start: null,
      credential_ids: [cred.id],
    });
    expect(Number.isNaN(Date.parse(entry.connector.time_created))).toBe(false);
    expect(entry.credential).toMatchObject({ id: cred.id, source: 'web', credential_json: {} });

    // The pair exists once; a credential of another source does not pair.
    const again = await s.call('PUT', `/api/manage/connector/${connectorId}/credential/${cred.id}`, as(a.key), {});
    expect(again.status).toBe(400);
    expect(again.json).toEqual({ detail: expect.any(String) });
    const drive = await credential(a.key, oauthCredential('drive'));
    const mismatch = await s.call('PUT', `/api/manage/connector/${connectorId}/credential/${drive.id}`, as(a.key), {});
    expect(mismatch.status).toBe(400);
    expect(mismatch.json.detail).toMatch(/google_drive/);
  });

  it('redacts credential secrets on every read and keeps them sealed in the database', async () => {
    const connectorId = await connector(a.key, driveConnector('Drive'));
    const created = await credential(a.key, oauthCredential('drive oauth'));
    const redacted = { google_tokens: MASK, google_primary_admin: MASK };
    expect(created.credential_json).toEqual(redacted);
    const pair = await associate(a.key, connectorId, created.id as number, { name: 'Drive (oauth)' });
    expect(pair).toMatchObject({ name: 'Drive (oauth)', access_type: 'private', groups: [1, 3] });

    const reads = [
      created,
      (await s.call('GET', `/api/manage/credential/${created.id}`, as(a.key))).json,
      (await s.call('GET', '/api/manage/credential', as(a.key))).json,
      pair,
      (await s.call('GET', `/api/manage/admin/cc-pair/${pair.id}`, as(a.key))).json,
      await statuses(a.key),
      (await s.call('GET', `/api/manage/admin/connector?credential=${created.id}`, as(a.key))).json,
    ];
    for (const read of reads) {
      const text = JSON.stringify(read);
      for (const secret of [CLIENT_SECRET, REFRESH_TOKEN, 'admin@acme.example', 'client-1.apps.example', SEALED_PREFIX]) expect({ secret, found: text.includes(secret) }).toEqual({ secret, found: false });
    }
    expect((await s.call('GET', `/api/manage/credential/${created.id}`, as(a.key))).json.credential_json).toEqual(redacted);
    expect((await s.call('GET', `/api/manage/admin/cc-pair/${pair.id}`, as(a.key))).json.credential.credential_json).toEqual(redacted);

    // In the database: the keys, each value sealed; no secret in clear anywhere in the row.
    const rows = await s.db.withTenant(a.tenantId, (sql) => sql.query<Json>(`SELECT * FROM core.credentials WHERE id = $1`, [created.id]));
    const row = rows.rows[0]!;
    const stored = JSON.stringify(row);
    for (const secret of [CLIENT_SECRET, REFRESH_TOKEN, 'admin@acme.example']) expect({ secret, found: stored.includes(secret) }).toEqual({ secret, found: false });
    expect(Object.keys(row.credential_json).sort()).toEqual(['google_primary_admin', 'google_tokens']);
    for (const v of Object.values(row.credential_json as Record<string, string>)) expect(v.startsWith(SEALED_PREFIX)).toBe(true);
    // ...and they open, with the platform key ring, to exactly what was given.
    expect(openCredentialJson(testSecretBox(), a.tenantId, created.id as number, row.credential_json)).toEqual(oauthCredential('x').credential_json);

    const sa = await credential(a.key, serviceAccountCredential('drive sa'));
    expect(sa.credential_json).toEqual({ google_service_account_key: MASK, google_primary_admin: MASK });
    const saRow = await s.db.withTenant(a.tenantId, (sql) => sql.query<Json>(`SELECT credential_json::text AS t FROM core.credentials WHERE id = $1`, [sa.id]));
    expect(saRow.rows[0]!.t).not.toContain('sa-private-key');
  });

  it('filters the listing by credential', async () => {
    const connectorId = await connector(a.key, driveConnector('Shared drive'));
    const one = await credential(a.key, oauthCredential('one'));
    const two = await credential(a.key, serviceAccountCredential('two'));
    const p1 = await associate(a.key, connectorId, one.id as number);
    const p2 = await associate(a.key, connectorId, two.id as number, { access_type: 'public', groups: [] });
    expect(p2).toMatchObject({ access_type: 'public', groups: [] });

    const byOne = await s.call('GET', `/api/manage/admin/connector?credential=${one.id}`, as(a.key));
    expect(byOne.status).toBe(200);
    expect(byOne.json.map((e: Json) => e.cc_pair_id)).toEqual([p1.id]);
    // The connector names both of its credentials.
    expect(byOne.json[0].connector.credential_ids).toEqual([one.id, two.id].sort((x, y) => x - y));
    expect(Object.keys(byOne.json[0]).sort()).toEqual(STATUS_FIELDS);
    const byTwo = await s.call('GET', `/api/manage/admin/connector?credential=${two.id}`, as(a.key));
    expect(byTwo.json.map((e: Json) => e.cc_pair_id)).toEqual([p2.id]);

    const all = (await s.call('GET', '/api/manage/admin/connector', as(a.key))).json.map((e: Json) => e.cc_pair_id);
    expect(all).toEqual((await statuses(a.key)).map((e) => e.cc_pair_id));
    expect(all).toEqual(expect.arrayContaining([p1.id, p2.id]));
    expect((await s.call('GET', '/api/manage/admin/connector?credential=null', as(a.key))).json.map((e: Json) => e.cc_pair_id)).toEqual(all);
    // A credential the tenant does not have is 404, as on its own routes (it was an empty list).
    expect(await s.call('GET', '/api/manage/admin/connector?credential=987654', as(a.key))).toMatchObject({ status: 404, json: { detail: 'credential not found' } });
  });

  it('answers the full cc pair info, and pauses and resumes a pair', async () => {
    const connectorId = await connector(a.key, driveConnector('Pausable'));
    const cred = await credential(a.key, oauthCredential('pausable'));
    const pair = await associate(a.key, connectorId, cred.id as number);

    const info = await s.call('GET', `/api/manage/admin/cc-pair/${pair.id}`, as(a.key));
    expect(info.status).toBe(200);
    expect(Object.keys(info.json).sort()).toEqual(CC_PAIR_FIELDS);
    expect(info.json).toMatchObject({
      id: pair.id,
      name: 'Pausable',
      status: 'ACTIVE',
      in_repeated_error_state: false,
      num_docs_indexed: 0,
      number_of_index_attempts: 0,
      last_index_attempt_status: null,
      access_type: 'private',
      groups: [1, 3],
    });
    expect(Object.keys(info.json.connector).sort()).toEqual(CONNECTOR_FIELDS);
    expect(info.json.connector).toMatchObject({ id: connectorId, source: 'google_drive', input_type: 'poll', refresh_freq: 600, prune_freq: 86_400, indexing_start: '2024-01-01T00:00:00.000Z', credential_ids: [cred.id] });
    expect(Object.keys(info.json.credential).sort()).toEqual(CREDENTIAL_FIELDS);

    // A run, which the pause cancels: every answer of the status route is the full info, its attempts included.
    const run = await s.call('POST', '/api/manage/admin/connector/run-once', as(a.key), { connector_id: connectorId });
    expect(run.status).toBe(200);
    const attemptId = run.json.attempts[0].id as number;
    const paused = await s.call('PUT', `/api/manage/admin/cc-pair/${pair.id}/status`, as(a.key), { status: 'PAUSED' });
    expect(paused.status).toBe(200);
    expect(Object.keys(paused.json).sort()).toEqual(CC_PAIR_FIELDS);
    expect(paused.json).toMatchObject({ status: 'PAUSED', number_of_index_attempts: 1, latest_index_attempts: [{ id: attemptId, status: 'canceled' }] });
    const read = (await s.call('GET', `/api/manage/admin/cc-pair/${pair.id}`, as(a.key))).json;
    expect(read.status).toBe('PAUSED');
    expect(paused.json.latest_index_attempts).toEqual(read.latest_index_attempts);
    // Asking for the status it has changes nothing.
    const again = await s.call('PUT', `/api/manage/admin/cc-pair/${pair.id}/status`, as(a.key), { status: 'PAUSED' });
    expect(again.json).toMatchObject({ status: 'PAUSED', latest_index_attempts: [{ id: attemptId }] });
    const resumed = await s.call('PUT', `/api/manage/admin/cc-pair/${pair.id}/status`, as(a.key), { status: 'ACTIVE' });
    expect(resumed.json).toMatchObject({ status: 'ACTIVE', latest_index_attempts: [{ id: attemptId }] });

    const deleting = await s.call('PUT', `/api/manage/admin/cc-pair/${pair.id}/status`, as(a.key), { status: 'DELETING' });
    expect(deleting.status).toBe(422);
    expect(deleting.json.detail[0].loc).toEqual(['body', 'status']);
    expect((await s.call('GET', '/api/manage/admin/cc-pair/987654', as(a.key))).status).toBe(404);
  });

  it('deletes a pair (and its connector with its last pair); a credential in use cannot be deleted', async () => {
    const connectorId = await connector(a.key, driveConnector('Doomed'));
    const one = await credential(a.key, oauthCredential('doomed one'));
    const two = await credential(a.key, oauthCredential('doomed two'));
    const p1 = await associate(a.key, connectorId, one.id as number);
    const p2 = await associate(a.key, connectorId, two.id as number);

    const inUse = await s.call('DELETE', `/api/manage/credential/${one.id}`, as(a.key));
    expect(inUse.status).toBe(400);
    expect(inUse.json.detail).toContain(String(p1.id));

    const del = await s.call('POST', '/api/manage/admin/deletion-attempt', as(a.key), { connector_id: connectorId, credential_id: one.id });
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ cc_pair_id: p1.id, status: 'DELETING', attempt_id: expect.any(Number) });
    await gone(p1.id as number);
    const listed = await statuses(a.key);
    expect(listed.map((e) => e.cc_pair_id)).not.toContain(p1.id);
    expect(listed.find((e) => e.cc_pair_id === p2.id)!.connector.credential_ids).toEqual([two.id]);
    // Again: there is no such pair any more.
    expect((await s.call('POST', '/api/manage/admin/deletion-attempt', as(a.key), { connector_id: connectorId, credential_id: one.id })).status).toBe(404);

    // The credential stays, and can now be deleted.
    expect((await s.call('GET', `/api/manage/credential/${one.id}`, as(a.key))).status).toBe(200);
    expect((await s.call('DELETE', `/api/manage/credential/${one.id}`, as(a.key))).status).toBe(204);
    expect((await s.call('GET', `/api/manage/credential/${one.id}`, as(a.key))).status).toBe(404);
    expect((await s.call('DELETE', `/api/manage/credential/${one.id}`, as(a.key))).status).toBe(404);

    // The last pair takes the connector with it.
    expect((await s.call('POST', '/api/manage/admin/deletion-attempt', as(a.key), { connector_id: connectorId, credential_id: two.id })).status).toBe(200);
    await gone(p2.id as number);
    const rows = await s.db.withTenant(a.tenantId, (sql) => sql.query(`SELECT 1 FROM core.connectors WHERE id = $1`, [connectorId]));
    expect(rows.rows).toHaveLength(0);
    const again = await s.call('PUT', `/api/manage/connector/${connectorId}/credential/${two.id}`, as(a.key), {});
    expect(again.status).toBe(404);
    expect(again.json).toEqual({ detail: 'connector not found' });
  });

  it('holds a tenant to 1000 cc pairs, concurrent associations included; another tenant has its own room', async () => {
    const t = await s.tenant();
    // 33 connectors × 30 credentials written directly: 990 pairs, 10 below the cap.
    const made = await s.db.withTenant(t.tenantId, async (sql) => {
      await sql.query(`INSERT INTO core.connectors (tenant_id, name, source, input_type, refresh_freq) SELECT $1, 'filled ' || i, 'google_drive', 'load_state', 3600 FROM generate_series(1, 34) i`, [t.tenantId]);
      await sql.query(`INSERT INTO core.credentials (tenant_id, owner, source, name) SELECT $1, 'api_key:filled', 'google_drive', 'filled ' || i FROM generate_series(1, 50) i`, [t.tenantId]);
      const connectors = (await sql.query<{ id: number }>(`SELECT id FROM core.connectors WHERE tenant_id = $1 ORDER BY id`, [t.tenantId])).rows.map((r) => Number(r.id));
      const credentials = (await sql.query<{ id: number }>(`SELECT id FROM core.credentials WHERE tenant_id = $1 ORDER BY id`, [t.tenantId])).rows.map((r) => Number(r.id));
      await sql.query(
        `INSERT INTO core.cc_pairs (tenant_id, connector_id, credential_id, name, access_type, groups, workspace_id, memory_id, creator_credential, creator_subject)
         SELECT $1, c, k, 'filled', 'public', '{}', $4, $5, 'api_key', 'filled' FROM unnest($2::bigint[]) c CROSS JOIN unnest($3::bigint[]) k`,
        [t.tenantId, connectors.slice(0, 33), credentials.slice(0, 30), t.workspaceId, t.memoryId],
      );
      return { connector: connectors[33]!, credentials: credentials.slice(30) };
    });
    // 20 associations of the last connector at once: exactly 10 go through.
    const tries = await Promise.all(made.credentials.map((k) => s.call('PUT', `/api/manage/connector/${made.connector}/credential/${k}`, as(t.key), {})));
    expect(tries.filter((r) => r.status === 200)).toHaveLength(10);
    for (const r of tries.filter((x) => x.status !== 200)) expect([r.status, r.json]).toEqual([409, { detail: expect.stringMatching(/^the tenant has 1000 cc pairs, the most it may have/) }]);
    const count = async () => (await s.db.withTenant(t.tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM core.cc_pairs WHERE tenant_id = $1`, [t.tenantId]))).rows[0]!.n;
    expect(await count()).toBe(1000);
    // Another tenant has its own room.
    const other = await s.tenant();
    const otherConnector = await s.call('POST', '/api/manage/admin/connector', as(other.key), webConnector('another tenant\'s'));
    const otherCredential = await s.call('POST', '/api/manage/credential', as(other.key), { credential_json: {}, source: 'web', name: 'web' });
    expect((await s.call('PUT', `/api/manage/connector/${otherConnector.json.id}/credential/${otherCredential.json.id}`, as(other.key), {})).status).toBe(200);
  });

  it('holds a tenant to 500 connectors and 500 credentials, concurrent creates included, and lists at most 500 credentials', async () => {
    const t = await s.tenant();
    // Written directly up to 10 below each cap (the real ones): 20 at once, counted under a lock, let exactly 10 through.
    await s.db.withTenant(t.tenantId, async (sql) => {
      await sql.query(`INSERT INTO core.connectors (tenant_id, name, source, input_type, refresh_freq) SELECT $1, 'filled ' || i, 'web', 'load_state', 3600 FROM generate_series(1, 490) i`, [t.tenantId]);
      await sql.query(`INSERT INTO core.credentials (tenant_id, owner, source, name) SELECT $1, 'api_key:filled', 'google_drive', 'filled ' || i FROM generate_series(1, 490) i`, [t.tenantId]);
    });
    const connectors = await Promise.all(Array.from({ length: 20 }, (_, i) => s.call('POST', '/api/manage/admin/connector', as(t.key), webConnector(`Race ${i}`))));
    expect(connectors.filter((r) => r.status === 200)).toHaveLength(10);
    for (const r of connectors.filter((x) => x.status !== 200)) expect([r.status, r.json]).toEqual([409, { detail: expect.stringMatching(/^the tenant has 500 connectors, the most it may have/) }]);
    const credentials = await Promise.all(Array.from({ length: 20 }, (_, i) => s.call('POST', '/api/manage/credential', as(t.key), oauthCredential(`race ${i}`))));
    expect(credentials.filter((r) => r.status === 201)).toHaveLength(10);
    for (const r of credentials.filter((x) => x.status !== 201)) expect([r.status, r.json]).toEqual([409, { detail: expect.stringMatching(/^the tenant has 500 credentials, the most it may have/) }]);
    const counts = (await s.db.withTenant(t.tenantId, (sql) => sql.query<{ connectors: number; credentials: number }>(
      `SELECT (SELECT count(*)::int FROM core.connectors) AS connectors, (SELECT count(*)::int FROM core.credentials) AS credentials`))).rows[0];
    expect(counts).toEqual({ connectors: 500, credentials: 500 });
    // Another tenant has its own room; a deleted credential frees a place.
    expect((await s.call('POST', '/api/manage/credential', as((await s.tenant()).key), oauthCredential('another tenant\'s'))).status).toBe(201);
    const last = credentials.find((r) => r.status === 201)!.json.id as number;
    expect((await s.call('DELETE', `/api/manage/credential/${last}`, as(t.key))).status).toBe(204);
    expect((await s.call('POST', '/api/manage/credential', as(t.key), oauthCredential('again'))).status).toBe(201);
    expect((await s.call('POST', '/api/manage/credential', as(t.key), oauthCredential('one more'))).status).toBe(409);
    // Credentials past the cap (made before it existed) are not listed: the answer stays bounded, oldest first.
    await s.db.withTenant(t.tenantId, (sql) => sql.query(`INSERT INTO core.credentials (tenant_id, owner, source, name) SELECT $1, 'api_key:filled', 'google_drive', 'late ' || i FROM generate_series(1, 5) i`, [t.tenantId]));
    const listed = (await s.call('GET', '/api/manage/credential', as(t.key))).json as Json[];
    expect(listed).toHaveLength(500);
    expect(listed.some((c) => String(c.name).startsWith('late '))).toBe(false);
  });

  it('keeps everything to its tenant: another tenant gets 404 and never sees it listed', async () => {
    const connectorId = await connector(a.key, driveConnector('Private to A'));
    const cred = await credential(a.key, oauthCredential('private to A'));
    const pair = await associate(a.key, connectorId, cred.id as number);
    const bCred = await credential(b.key, oauthCredential('B\'s'));

    const notFound = async (method: string, path: string, body?: unknown) => {
      const r = await s.call(method, path, as(b.key), body);
      expect({ method, path, status: r.status, body: r.json }).toEqual({ method, path, status: 404, body: { detail: expect.any(String) } });
    };
    await notFound('GET', `/api/manage/admin/cc-pair/${pair.id}`);
    await notFound('PUT', `/api/manage/admin/cc-pair/${pair.id}/status`, { status: 'PAUSED' });
    await notFound('GET', `/api/manage/credential/${cred.id}`);
    await notFound('DELETE', `/api/manage/credential/${cred.id}`);
    await notFound('PUT', `/api/manage/connector/${connectorId}/credential/${bCred.id}`, {});
    await notFound('PUT', `/api/manage/connector/${connectorId}/credential/${cred.id}`, {});
    await notFound('POST', '/api/manage/admin/deletion-attempt', { connector_id: connectorId, credential_id: cred.id });
    // A tenant_id parameter is accepted and ignored: the tenant is the credential's.
    await notFound('GET', `/api/manage/admin/cc-pair/${pair.id}?tenant_id=${encodeURIComponent(a.tenantId)}`);

    const bStatus = await s.call('GET', `/api/manage/admin/connector/status?tenant_id=${encodeURIComponent(a.tenantId)}`, as(b.key));
    expect(bStatus.status).toBe(200);
    expect(bStatus.json).toEqual([]);
    expect((await s.call('GET', `/api/manage/admin/connector?credential=${cred.id}`, as(b.key))).status).toBe(404);
    const bCreds = (await s.call('GET', '/api/manage/credential', as(b.key))).json as Json[];
    expect(bCreds.map((c) => c.id)).toEqual([bCred.id]);

    // A's pair is untouched.
    expect((await s.call('GET', `/api/manage/admin/cc-pair/${pair.id}`, as(a.key))).json.status).toBe('ACTIVE');
  });

  it('is for administrators: a member gets 403 detail; an admin user is the credential\'s user_id; a read-only key may only look', async () => {
    const member = await s.user(a.tenantId, 'member');
    for (const [method, path, body] of [
      ['GET', '/api/manage/admin/connector/status', undefined],
      ['GET', '/api/manage/admin/connector', undefined],
      ['POST', '/api/manage/admin/connector', webConnector('nope')],
      ['GET', '/api/manage/admin/cc-pair/1', undefined],
      ['GET', '/api/manage/credential', undefined],
      ['POST', '/api/manage/credential', { name: 'nope', source: 'web', credential_json: {} }],
      ['DELETE', '/api/manage/credential/1', undefined],
      ['PUT', '/api/manage/connector/1/credential/1', {}],
      ['PUT', '/api/manage/admin/cc-pair/1/status', { status: 'PAUSED' }],
      ['POST', '/api/manage/admin/deletion-attempt', { connector_id: 1, credential_id: 1 }],
    ] as const) {
      const r = await s.call(method, path, as(member.token), body);
      expect({ method, path, status: r.status, body: r.json }).toEqual({ method, path, status: 403, body: { detail: 'administrators only' } });
    }

    const admin = await s.user(a.tenantId, 'admin');
    const cred = await credential(admin.token, { name: 'admin\'s', source: 'web', credential_json: {} });
    expect(cred.user_id).toBe(admin.userId);
    // A signed-in user's address comes with the gateway's identity; a key has none.
    expect(cred.user_email).toBe(admin.email);
    expect((await s.call('GET', `/api/manage/credential/${cred.id}`, as(a.key))).json.user_email).toBe(admin.email);
    expect((await s.call('GET', '/api/manage/admin/connector/status', as(admin.token))).status).toBe(200);

    const readOnly = await s.key(a.tenantId, { scopes: { access: 'read' } });
    expect((await s.call('GET', '/api/manage/admin/connector/status', as(readOnly))).status).toBe(200);
    expect((await s.call('GET', `/api/manage/credential/${cred.id}`, as(readOnly))).status).toBe(200);
    // (Refused by the gateway already, in its own error shape, before core's guard would.)
    expect((await s.call('POST', '/api/manage/admin/connector', as(readOnly), webConnector('read-only'))).status).toBe(403);
  });

  it('answers 422 with every issue and its loc for invalid input', async () => {
    const locs = (r: { json: Json }) => (r.json.detail as Array<{ loc: string[]; msg: string; type: string }>).map((d) => d.loc.join('.')).sort();
    const expect422 = async (method: string, path: string, body: unknown, expected: string[]) => {
      const r = await s.call(method, path, as(a.key), body);
      expect({ method, path, status: r.status }).toEqual({ method, path, status: 422 });
      for (const d of r.json.detail) expect(d).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: 'value_error' });
      expect(locs(r)).toEqual(expected.sort());
    };

    await expect422('POST', '/api/manage/admin/connector', { ...webConnector('x'), source: 'slack' }, ['body.source']);
    await expect422('POST', '/api/manage/admin/connector', { ...webConnector('x'), connector_specific_config: { base_url: 'ftp://files.acme.example', web_connector_type: 'single' } }, ['body.connector_specific_config.base_url']);
    await expect422('POST', '/api/manage/admin/connector', { ...webConnector('x'), connector_specific_config: { base_url: 'javascript:alert(1)', web_connector_type: 'everything' } }, [
      'body.connector_specific_config.base_url',
      'body.connector_specific_config.web_connector_type',
    ]);
    await expect422('POST', '/api/manage/admin/connector', { ...webConnector('x'), input_type: 'poll' }, ['body.input_type']);
    // A time PostgreSQL cannot store (year 0, also once moved to UTC) is refused like any bad one, not a 500.
    for (const instant of ['0000-01-01T00:00:00Z', '0001-01-01T00:00:00+05:00']) {
      await expect422('POST', '/api/manage/admin/connector', { ...webConnector('x'), indexing_start: instant }, ['body.indexing_start']);
    }
    // A base URL the indexer could never read: 400 with the reason, and no connector.
    for (const [base, why] of [
      // A name that does not resolve and one that points inside are refused in the same words (no DNS oracle).
      ['https://nowhere.acme.example/', /^base_url cannot be read by a connector: nowhere\.acme\.example does not resolve to an address Lore may reach$/],
      ['https://inside.acme.example/', /^base_url cannot be read by a connector: inside\.acme\.example does not resolve to an address Lore may reach$/],
      ['http://10.0.0.5/', /private address is not allowed/],
      ['http://169.254.169.254/latest/', /not allowed/],
      ['http://metadata.google.internal/', /local/],
    ] as const) {
      const r = await s.call('POST', '/api/manage/admin/connector', as(a.key), { ...webConnector('x'), connector_specific_config: { base_url: base, web_connector_type: 'single' } });
      expect({ base, status: r.status }).toEqual({ base, status: 400 });
      expect(r.json).toEqual({ detail: expect.stringContaining('base_url cannot be read by a connector') });
      expect(r.json.detail).toMatch(why);
    }
    await expect422('POST', '/api/manage/admin/connector', { ...webConnector('x'), source: 'file', connector_specific_config: { file_locations: [] } }, ['body.connector_specific_config.file_locations']);
    await expect422('POST', '/api/manage/admin/connector', { ...webConnector('x'), groups: [1] }, ['body.groups']);
    await expect422('POST', '/api/manage/admin/connector', { ...webConnector('x'), refresh_freq: 1.5, indexing_start: 'yesterday' }, ['body.indexing_start', 'body.refresh_freq']);
    // Missing fields, all at once, with the config still checked for its source.
    await expect422('POST', '/api/manage/admin/connector', { source: 'web', connector_specific_config: {} }, [
      'body.access_type',
      'body.connector_specific_config.base_url',
      'body.connector_specific_config.web_connector_type',
      'body.input_type',
      'body.name',
    ]);
    await expect422('POST', '/api/manage/admin/connector', {}, ['body.access_type', 'body.connector_specific_config', 'body.input_type', 'body.name', 'body.source']);

    await expect422('POST', '/api/manage/credential', { name: 'x', source: 'sharepoint', credential_json: {} }, ['body.source']);
    await expect422('POST', '/api/manage/credential', { name: 'x', source: 'web', credential_json: { password: 'p' } }, ['body.credential_json']);
    await expect422('POST', '/api/manage/credential', { name: 'x', source: 'google_drive', credential_json: { google_tokens: { client_id: 'c' } } }, [
      'body.credential_json.google_primary_admin',
      'body.credential_json.google_tokens.client_secret',
      'body.credential_json.google_tokens.refresh_token',
    ]);
    await expect422('POST', '/api/manage/credential', {}, ['body.credential_json', 'body.name', 'body.source']);

    await expect422('GET', '/api/manage/admin/cc-pair/abc', undefined, ['path.cc_pair_id']);
    await expect422('GET', '/api/manage/admin/cc-pair/1.5', undefined, ['path.cc_pair_id']);
    await expect422('GET', '/api/manage/credential/x1', undefined, ['path.credential_id']);
    await expect422('DELETE', '/api/manage/credential/99999999999', undefined, ['path.credential_id']);
    await expect422('PUT', '/api/manage/connector/x/credential/y', {}, ['path.connector_id', 'path.credential_id']);
    await expect422('PUT', '/api/manage/connector/1/credential/1', { access_type: 'secret' }, ['body.access_type']);
    await expect422('PUT', '/api/manage/admin/cc-pair/1/status', {}, ['body.status']);
    await expect422('POST', '/api/manage/admin/deletion-attempt', { connector_id: '1' }, ['body.connector_id', 'body.credential_id']);
    await expect422('GET', '/api/manage/admin/connector?credential=abc', undefined, ['query.credential']);
  });
});
