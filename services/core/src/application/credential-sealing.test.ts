import { PgliteDb, SecretBox, createLogger, generateEncryptionKey, parseEncryptionKeys, runMigrations, runRuntimeMigrations } from '@lore/runtime';
import { CORE_MIGRATIONS } from '../core-service';
import { getCredential, insertCredential, setCredentialJson } from '../store/credentials';
import { resealCredentials, startCredentialSealing } from './credential-sealing';
import { credentialValueContext, openCredentialJson, sealCredentialJson } from './credential-secrets';

jest.setTimeout(60_000);

const silent = createLogger({ level: 'silent', service: 'core-unit' });
const ringA = parseEncryptionKeys(generateEncryptionKey('key-a'));
const ringB = parseEncryptionKeys(generateEncryptionKey('key-b'));
const lost = new SecretBox(parseEncryptionKeys(generateEncryptionKey('key-lost')));
const json = { google_tokens: { client_id: 'c', client_secret: 's', refresh_token: 'r' }, google_primary_admin: 'admin@acme.example' };

/** Core's migrations on embedded PostgreSQL (embedded mode runs the pass there). */
describe('re-sealing stored credentials after a key rotation (embedded PostgreSQL)', () => {
  let db: PgliteDb;

  beforeAll(async () => {
    db = await PgliteDb.open();
    await runRuntimeMigrations(db);
    await runMigrations(db, CORE_MIGRATIONS);
  });

  afterAll(async () => {
    await db?.close();
  });

  const create = (tenantId: string, seal: (id: number) => Record<string, string>) =>
    db.withTenant(tenantId, async (sql) => {
      const row = await insertCredential(sql, tenantId, { owner: 'api_key:k', user_email: '', source: 'google_drive', name: 'drive', admin_public: true, curator_public: false, groups: [] }, { workspace_id: 'w', memory_id: 'm' });
      return setCredentialJson(sql, tenantId, row.id, seal(row.id));
    });
  const read = async (tenantId: string, id: number) => (await db.withTenant(tenantId, (sql) => getCredential(sql, tenantId, id)))!;

  it('re-seals every value under the new first key in its own tenant, and leaves and counts what does not open', async () => {
    const boxA = new SecretBox(ringA);
    const one = await create('tenant-1', (id) => sealCredentialJson(boxA, 'tenant-1', id, json));
    const two = await create('tenant-2', (id) => sealCredentialJson(boxA, 'tenant-2', id, json));
    // One value sealed with a key no longer in the ring, next to one the ring opens.
    const mixed = await create('tenant-1', (id) => ({
      ...sealCredentialJson(boxA, 'tenant-1', id, { google_primary_admin: 'x@acme.example' }),
      google_tokens: lost.seal(JSON.stringify(json.google_tokens), credentialValueContext('tenant-1', id, 'google_tokens')),
    }));
    // Already under the new key: not even listed.
    const current = await create('tenant-2', (id) => sealCredentialJson(new SecretBox(ringB), 'tenant-2', id, json));

    const rotated = new SecretBox([...ringB, ...ringA]);
    expect(await resealCredentials(db, rotated, silent, { batchSize: 1 })).toEqual({ sealed: 3, unreadable: 1 });

    const onlyB = new SecretBox(ringB);
    for (const [tenant, row] of [['tenant-1', one], ['tenant-2', two], ['tenant-2', current]] as const) {
      const after = await read(tenant, row.id);
      for (const v of Object.values(after.credential_json)) expect(SecretBox.keyIdOf(v)).toBe('key-b');
      expect(openCredentialJson(onlyB, tenant, row.id, after.credential_json)).toEqual(json);
      // The credential itself has not changed.
      expect(after.time_updated).toEqual(row.time_updated);
    }
    const mixedAfter = await read('tenant-1', mixed.id);
    expect(mixedAfter.credential_json.google_tokens).toBe(mixed.credential_json.google_tokens);
    expect(SecretBox.keyIdOf(mixedAfter.credential_json.google_primary_admin!)).toBe('key-b');
    expect(JSON.parse(onlyB.open(mixedAfter.credential_json.google_primary_admin!, credentialValueContext('tenant-1', mixed.id, 'google_primary_admin')))).toBe('x@acme.example');

    // A second pass has nothing left but the value it cannot open.
    expect(await resealCredentials(db, rotated, silent)).toEqual({ sealed: 0, unreadable: 1 });
  });

  it('stops on its signal, and runs in the background until stopped', async () => {
    const stopped = new AbortController();
    stopped.abort();
    expect(await resealCredentials(db, new SecretBox([...parseEncryptionKeys(generateEncryptionKey('key-c')), ...ringB]), silent, { signal: stopped.signal })).toEqual({ sealed: 0, unreadable: 0 });

    const pass = startCredentialSealing(db, new SecretBox([...ringB, ...ringA]), silent);
    expect(await pass.done).toEqual({ sealed: 0, unreadable: 1 });
    await pass.stop();
  });

  it('lists ids only to the application role, across tenants, without any value', async () => {
    const r = await db.query<Record<string, unknown>>(`SELECT * FROM core.credentials_to_seal('enc:v1:nobody:', NULL, 10)`);
    expect(r.rows.length).toBeGreaterThan(0);
    for (const row of r.rows) expect(Object.keys(row).sort()).toEqual(['id', 'tenant_id']);
    expect(new Set(r.rows.map((row) => row.tenant_id))).toEqual(new Set(['tenant-1', 'tenant-2']));
  });
});
