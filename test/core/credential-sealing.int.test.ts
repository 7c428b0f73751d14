/**
 * Re-sealing connector credentials after a key rotation, on real PostgreSQL: credentials created through the gateway
 * under one key ring, then the core worker's start-up pass run with a new key put first. Every value ends up sealed
 * with the new key (and opens with it alone), reads stay redacted, each tenant's rows are rewritten in that tenant,
 * and a value sealed with a key missing from the ring is left as it is and counted.
 */
import { SEALED_PREFIX, SecretBox, createLogger, generateEncryptionKey, parseEncryptionKeys } from '@lore/runtime';
import { resealCredentials } from '../../services/core/src/application/credential-sealing';
import { credentialValueContext, openCredentialJson } from '../../services/core/src/application/credential-secrets';
import { closeIdleHttpConnections } from '../support/http';
import { testEncryptionKeys } from '../support/encryption';
import type { TenantFixture } from '../gateway/harness';
import { startCoreStack, type CoreStack } from './harness';

type Json = Record<string, any>;

const MASK = '********';
const silent = createLogger({ level: 'silent', service: 'core-test' });

const oauth = (n: string) => ({
  google_tokens: { client_id: `client-${n}.apps.example`, client_secret: `client-secret-${n}`, refresh_token: `refresh-token-${n}` },
  google_primary_admin: `admin-${n}@acme.example`,
});
const serviceAccount = (n: string) => ({
  google_service_account_key: { type: 'service_account', project_id: 'acme', client_email: `indexer-${n}@acme.iam.example`, private_key: `-----BEGIN PRIVATE KEY-----\n${n}\n-----END PRIVATE KEY-----\n` },
  google_primary_admin: `admin-${n}@acme.example`,
});

describe('core: re-sealing stored credentials under a new encryption key', () => {
  let s: CoreStack;
  let a: TenantFixture;
  let b: TenantFixture;
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  // Ring A is the stack's (core seals with it); ring B's key is the new one.
  const ringA = testEncryptionKeys();
  const ringB = parseEncryptionKeys(generateEncryptionKey('test-k2'));

  beforeAll(async () => {
    s = await startCoreStack();
    a = await s.tenant();
    b = await s.tenant();
  });
  afterAll(async () => {
    await s?.close();
    closeIdleHttpConnections();
  });

  async function credential(key: string, name: string, json: Json): Promise<number> {
    const r = await s.call('POST', '/api/manage/credential', as(key), { name, source: 'google_drive', credential_json: json });
    expect(r.status).toBe(201);
    return r.json.id as number;
  }
  const stored = async (tenantId: string, id: number) =>
    (await s.db.withTenant(tenantId, (sql) => sql.query<{ credential_json: Record<string, string>; time_updated: Date }>(`SELECT credential_json, time_updated FROM core.credentials WHERE id = $1`, [id]))).rows[0]!;

  it('re-seals every value with the first key of the ring, in its own tenant, and leaves what does not open', async () => {
    const given = new Map<number, { tenantId: string; key: string; json: Json }>();
    for (const [t, n, json] of [[a, 'a1', oauth('a1')], [a, 'a2', serviceAccount('a2')], [b, 'b1', oauth('b1')], [b, 'b2', serviceAccount('b2')]] as const) {
      given.set(await credential(t.key, n, json), { tenantId: t.tenantId, key: t.key, json });
    }
    // A credential with no value has nothing to re-seal.
    const web = await s.call('POST', '/api/manage/credential', as(a.key), { name: 'web', source: 'web', credential_json: {} });
    expect(web.status).toBe(201);
    // One value sealed with a key no ring has any more (lost), next to one sealed with ring A.
    const lostId = await credential(a.key, 'lost', oauth('lost'));
    const lostValue = new SecretBox(parseEncryptionKeys(generateEncryptionKey('test-gone'))).seal(JSON.stringify(oauth('lost').google_tokens), credentialValueContext(a.tenantId, lostId, 'google_tokens'));
    await s.db.withTenant(a.tenantId, (sql) => sql.query(`UPDATE core.credentials SET credential_json = jsonb_set(credential_json, '{google_tokens}', to_jsonb($2::text)) WHERE id = $1`, [lostId, lostValue]));
    const before = new Map<number, Date>();
    for (const [id, g] of given) {
      const row = await stored(g.tenantId, id);
      for (const v of Object.values(row.credential_json)) expect(SecretBox.keyIdOf(v)).toBe(ringA[0]!.id);
      before.set(id, row.time_updated);
    }

    // The key rotation: B seals from now on, A still opens.
    const rotated = new SecretBox([...ringB, ...ringA]);
    expect(await resealCredentials(s.db, rotated, silent, { batchSize: 2 })).toEqual({ sealed: 5, unreadable: 1 });

    const onlyB = new SecretBox(ringB);
    for (const [id, g] of given) {
      const row = await stored(g.tenantId, id);
      for (const v of Object.values(row.credential_json)) expect(SecretBox.keyIdOf(v)).toBe('test-k2');
      // Ring B alone opens it to what was given: A can be retired.
      expect(openCredentialJson(onlyB, g.tenantId, id, row.credential_json)).toEqual(g.json);
      // Sealed in its own tenant: the values are bound to it, and another tenant's binding does not open them.
      const other = g.tenantId === a.tenantId ? b.tenantId : a.tenantId;
      expect(() => openCredentialJson(onlyB, other, id, row.credential_json)).toThrow();
      expect(row.time_updated).toEqual(before.get(id));
      // Reads stay redacted.
      const read = await s.call('GET', `/api/manage/credential/${id}`, as(g.key));
      expect(read.status).toBe(200);
      expect(read.json.credential_json).toEqual(Object.fromEntries(Object.keys(g.json).map((k) => [k, MASK])));
      expect(JSON.stringify(read.json)).not.toContain(SEALED_PREFIX);
    }
    // Each tenant's list, redacted as before.
    for (const t of [a, b]) {
      const list = await s.call('GET', '/api/manage/credential', as(t.key));
      expect(list.status).toBe(200);
      for (const c of list.json as Json[]) for (const v of Object.values(c.credential_json as Json)) expect(v).toBe(MASK);
    }

    // The lost value is left as it was; its neighbour was re-sealed.
    const lost = await stored(a.tenantId, lostId);
    expect(lost.credential_json.google_tokens).toBe(lostValue);
    expect(SecretBox.keyIdOf(lost.credential_json.google_primary_admin!)).toBe('test-k2');
    expect(JSON.parse(onlyB.open(lost.credential_json.google_primary_admin!, credentialValueContext(a.tenantId, lostId, 'google_primary_admin')))).toBe('admin-lost@acme.example');

    // A second pass has nothing left but the value it cannot open.
    expect(await resealCredentials(s.db, rotated, silent)).toEqual({ sealed: 0, unreadable: 1 });
  });

  it('lists credentials across tenants by id only, for the application role alone', async () => {
    const rows = await s.db.query<Json>(`SELECT * FROM core.credentials_to_seal('enc:v1:nobody:', NULL, 1000)`);
    expect(rows.rows.length).toBeGreaterThan(0);
    for (const row of rows.rows) expect(Object.keys(row).sort()).toEqual(['id', 'tenant_id']);
    expect(new Set(rows.rows.map((r) => r.tenant_id))).toEqual(new Set([a.tenantId, b.tenantId]));
    // Without its tenant the application role sees no credential itself.
    expect((await s.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM core.credentials`)).rows[0]!.n).toBe(0);
    const appRole = (await s.db.query<{ r: string }>('SELECT current_user AS r')).rows[0]!.r;
    const grants = await s.db.asOwner((sql) =>
      sql.query<{ app: boolean; everyone: boolean }>(
        `SELECT has_function_privilege($1, 'core.credentials_to_seal(text, integer, integer)', 'EXECUTE') AS app,
                EXISTS (SELECT 1 FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) x
                         WHERE p.oid = 'core.credentials_to_seal(text, integer, integer)'::regprocedure AND x.grantee = 0) AS everyone`,
        [appRole],
      ),
    );
    expect(grants.rows[0]).toEqual({ app: true, everyone: false });
  });
});
