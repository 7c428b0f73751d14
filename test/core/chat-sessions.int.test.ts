/**
 * Chat sessions and personas end to end: client → gateway (API keys, session JWTs, identity) → core, on real
 * PostgreSQL and Redis. Exact spec 2 shapes: the session's ten fields, 400 `detail` for an unknown persona, 422
 * `{ detail: [{ loc, msg, type }] }` for every invalid input.
 */
import { IdentitySigner, IDENTITY_HEADER, runMigrations } from '@lore/runtime';
import { CORE_MIGRATIONS } from '@lore/core';
import { closeIdleHttpConnections, http } from '../support/http';
import { adminCall, type TenantFixture } from '../gateway/harness';
import { startCoreStack, type CoreStack } from './harness';

const SESSION_FIELDS = ['current_alternate_model', 'current_temperature_override', 'global_persona_id', 'id', 'is_global_persona', 'name', 'persona_id', 'shared_status', 'time_created', 'time_updated'];
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('core: chat sessions and personas through the gateway', () => {
  let s: CoreStack;
  let a: TenantFixture;
  let b: TenantFixture;
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  beforeAll(async () => {
    s = await startCoreStack();
    a = await s.tenant();
    b = await s.tenant();
  });
  afterAll(async () => {
    await s?.close();
    closeIdleHttpConnections();
  });

  async function newSession(key: string, personaId = 0): Promise<string> {
    const r = await s.call('POST', '/api/chat/create-chat-session', as(key), { persona_id: personaId });
    expect(r.status).toBe(200);
    expect(r.json.chat_session_id).toMatch(UUID_RE);
    return r.json.chat_session_id as string;
  }

  it('creates a session with the default persona and lists it with exactly the spec\'s fields', async () => {
    const id = await newSession(a.key);
    const list = await s.call('GET', '/api/chat/get-user-chat-sessions', as(a.key));
    expect(list.status).toBe(200);
    const mine = (list.json.sessions as Array<Record<string, unknown>>).find((x) => x.id === id)!;
    expect(Object.keys(mine).sort()).toEqual(SESSION_FIELDS);
    expect(mine).toMatchObject({ persona_id: 0, global_persona_id: 0, is_global_persona: true, shared_status: 'private', current_alternate_model: null, current_temperature_override: null });
    expect(Number.isNaN(Date.parse(String(mine.time_created)))).toBe(false);
  });

  it('accepts the API key in x-api-key and in the lore_api_key cookie as well as Bearer', async () => {
    const viaHeader = await s.call('GET', '/api/chat/get-user-chat-sessions', { 'x-api-key': a.key });
    const viaCookie = await s.call('GET', '/api/chat/get-user-chat-sessions', { cookie: `lore_api_key=${a.key}` });
    expect(viaHeader.status).toBe(200);
    expect(viaCookie.status).toBe(200);
    expect(viaCookie.json.sessions.length).toBe(viaHeader.json.sessions.length);
    expect((await s.call('GET', '/api/chat/get-user-chat-sessions', {})).status).toBe(401);
  });

  it('takes the cookie from the gateway\'s own origin only: a request another site makes a browser send is 403', async () => {
    const cookie = `lore_api_key=${a.key}`;
    const create = (headers: Record<string, string>) => s.call('POST', '/api/chat/create-chat-session', headers, { persona_id: 0, description: 'origin test' });
    const own = new URL(s.gateway.publicUrl).origin;
    expect((await create({ cookie, origin: own })).status).toBe(200);
    expect((await create({ cookie, 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    const crossSites: Array<Record<string, string>> = [{ origin: 'https://elsewhere.example' }, { origin: 'null' }, { origin: 'not a url' }, { 'sec-fetch-site': 'cross-site', origin: own }];
    for (const crossSite of crossSites) {
      const r = await create({ cookie, ...crossSite });
      expect([r.status, r.json]).toEqual([403, { detail: expect.stringMatching(/lore_api_key cookie is accepted from this origin only/) }]);
    }
    // A plain GET a page embeds (no Origin) cannot read the answer across origins; the refusal is for what a site makes a browser send.
    expect((await s.call('GET', '/api/chat/get-user-chat-sessions', { cookie, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    // A key in a header is no cookie: a browser never adds it on its own, so any origin may send it.
    expect((await create({ 'x-api-key': a.key, origin: 'https://elsewhere.example' })).status).toBe(200);
    expect((await create({ authorization: `Bearer ${a.key}`, origin: 'https://elsewhere.example' })).status).toBe(200);
  });

  it('answers 400 with detail for an unknown persona, and 422 with every issue for invalid input', async () => {
    const unknown = await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 987654 });
    expect(unknown.status).toBe(400);
    expect(unknown.json).toEqual({ detail: expect.stringContaining('987654') });

    const wrongType = await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 'x' });
    expect(wrongType.status).toBe(422);
    expect(wrongType.json.detail).toEqual([expect.objectContaining({ loc: ['body', 'persona_id'], msg: expect.any(String), type: expect.any(String) })]);

    const missing = await s.call('POST', '/api/chat/create-chat-session', as(a.key), {});
    expect(missing.status).toBe(422);
    expect(missing.json.detail[0].loc).toEqual(['body', 'persona_id']);

    const badUuid = await s.call('GET', '/api/chat/get-chat-session/not-a-uuid', as(a.key));
    expect(badUuid.status).toBe(422);
    expect(badUuid.json.detail[0].loc).toEqual(['path', 'session_id']);

    const badBool = await s.call('GET', '/api/chat/get-user-chat-sessions?include_failed_chats=maybe', as(a.key));
    expect(badBool.status).toBe(422);
    expect(badBool.json.detail[0].loc).toEqual(['query', 'include_failed_chats']);

    const notJson = await s.call('POST', '/api/chat/create-chat-session', { ...as(a.key), 'content-type': 'application/json' }, undefined);
    expect([400, 422]).toContain(notJson.status);
    expect(notJson.json.detail).toBeDefined();

    const tooHot = await s.call('PUT', '/api/chat/update-chat-session-temperature', as(a.key), { chat_session_id: await newSession(a.key), temperature_override: 5 });
    expect(tooHot.status).toBe(422);
    expect(tooHot.json.detail[0].loc).toEqual(['body', 'temperature_override']);
  });

  it('renames, sets temperature and model overrides, and shows them in the detail', async () => {
    const id = await newSession(a.key);
    const renamed = await s.call('PUT', '/api/chat/rename-chat-session', as(a.key), { chat_session_id: id, name: '  Quarterly numbers ' });
    expect(renamed.status).toBe(200);
    expect(renamed.json).toEqual({ new_name: 'Quarterly numbers' });
    expect((await s.call('PUT', '/api/chat/update-chat-session-temperature', as(a.key), { chat_session_id: id, temperature_override: 0.3 })).status).toBe(200);
    expect((await s.call('PUT', '/api/chat/update-chat-session-model', as(a.key), { chat_session_id: id, new_alternate_model: 'gpt-x' })).status).toBe(200);
    const d = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key));
    expect(d.status).toBe(200);
    expect(d.json).toMatchObject({ chat_session_id: id, description: 'Quarterly numbers', persona_id: 0, persona_name: 'Lore', deleted: false, current_alternate_model: 'gpt-x' });
    // A new session's tree is its empty system root.
    expect(d.json.messages).toEqual([expect.objectContaining({ message_type: 'system', message: '', parent_message: null })]);
    expect(d.json.current_temperature_override).toBeCloseTo(0.3, 5);
    // null clears an override
    expect((await s.call('PUT', '/api/chat/update-chat-session-model', as(a.key), { chat_session_id: id, new_alternate_model: null })).status).toBe(200);
    expect((await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).json.current_alternate_model).toBeNull();
  });

  it('keeps sessions to their owner: another tenant, and another key of the same tenant, get 404 unless it is shared', async () => {
    const id = await newSession(a.key);
    const other = await s.key(a.tenantId);
    for (const key of [b.key, other]) {
      const r = await s.call('GET', `/api/chat/get-chat-session/${id}`, as(key));
      expect(r.status).toBe(404);
      expect(r.json).toEqual({ detail: expect.any(String) });
      expect((await s.call('PUT', '/api/chat/rename-chat-session', as(key), { chat_session_id: id, name: 'taken' })).status).toBe(404);
      expect((await s.call('DELETE', `/api/chat/delete-chat-session/${id}?hard_delete=true`, as(key))).status).toBe(404);
    }
    // A tenant_id parameter is accepted and ignored: the tenant is the credential's.
    const spoof = await s.call('GET', `/api/chat/get-chat-session/${id}?tenant_id=${encodeURIComponent(a.tenantId)}`, as(b.key));
    expect(spoof.status).toBe(404);
    const listB = await s.call('GET', `/api/chat/get-user-chat-sessions?tenant_id=${encodeURIComponent(a.tenantId)}`, as(b.key));
    expect(listB.json.sessions.map((x: { id: string }) => x.id)).not.toContain(id);

    expect((await s.call('PATCH', `/api/chat/chat-session/${id}`, as(a.key), { sharing_status: 'public' })).status).toBe(200);
    expect((await s.call('GET', `/api/chat/get-chat-session/${id}`, as(other))).status).toBe(404);
    expect((await s.call('GET', `/api/chat/get-chat-session/${id}?is_shared=true`, as(other))).status).toBe(200);
    // Shared within the tenant only.
    expect((await s.call('GET', `/api/chat/get-chat-session/${id}?is_shared=true`, as(b.key))).status).toBe(404);
    const listed = await s.call('GET', '/api/chat/get-user-chat-sessions', as(a.key));
    expect(listed.json.sessions.find((x: { id: string }) => x.id === id).shared_status).toBe('public');
  });

  it('gives a rotated key\'s replacement, after the upgrade, the sessions and projects it made before (core migration 0012)', async () => {
    const t = await s.tenant();
    const first = await newSession(t.key);
    const rotated = await adminCall(s.gateway, 'POST', `/internal/v1/tenants/${t.tenantId}/keys/${t.keyId}/rotate`, { overlap_seconds: 3600 });
    expect(rotated.status).toBe(201);
    const replacement = rotated.json.key as string;
    const replacementId = rotated.json.key_id as string;
    const made = await newSession(replacement);
    const project = (await s.call('POST', '/api/chat/projects', as(replacement), { name: 'Made by the replacement' })).json.id as number;
    // Before gateway migration 0007 the replacement's subject was its own id: its rows named it.
    const before = `ck_live:${replacementId}`;
    await s.db.withTenant(t.tenantId, async (sql) => {
      await sql.query(`UPDATE core.chat_sessions SET owner = $2 WHERE tenant_id = $1 AND session_id = $3`, [t.tenantId, before, made]);
      await sql.query(`UPDATE core.chat_projects SET owner = $2 WHERE tenant_id = $1 AND project_id = $3`, [t.tenantId, before, project]);
    });
    const sessionsOf = async (key: string) => ((await s.call('GET', '/api/chat/get-user-chat-sessions', as(key))).json.sessions as Array<{ id: string }>).map((x) => x.id);
    const projectsOf = async (key: string) => ((await s.call('GET', '/api/chat/projects', as(key))).json.projects as Array<{ id: number }>).map((x) => x.id);
    expect(await sessionsOf(replacement)).toEqual([first]);
    expect(await projectsOf(replacement)).toEqual([]);

    // The upgrade: core's migrations run again (0012 as a data directory of that time has not had it).
    await s.db.asOwner((sql) => sql.query(`DELETE FROM core.schema_migrations WHERE version = '0012_key_owners_to_lineage.sql'`));
    await runMigrations(s.db, CORE_MIGRATIONS);

    for (const key of [replacement, t.key]) {
      expect((await sessionsOf(key)).sort()).toEqual([first, made].sort());
      expect(await projectsOf(key)).toEqual([project]);
      expect((await s.call('GET', `/api/chat/get-chat-session/${made}`, as(key))).status).toBe(200);
    }
    const owners = await s.db.withTenant(t.tenantId, async (sql) => (await sql.query<{ owner: string }>(`SELECT DISTINCT owner FROM core.chat_sessions WHERE tenant_id = $1`, [t.tenantId])).rows);
    expect(owners).toEqual([{ owner: `ck_live:${t.keyId}` }]);
  });

  it('soft-deletes (retrievable with include_deleted) and hard-deletes (gone with its rows)', async () => {
    const id = await newSession(a.key);
    expect((await s.call('DELETE', `/api/chat/delete-chat-session/${id}`, as(a.key))).status).toBe(200);
    const list = await s.call('GET', '/api/chat/get-user-chat-sessions', as(a.key));
    expect(list.json.sessions.map((x: { id: string }) => x.id)).not.toContain(id);
    expect((await s.call('GET', `/api/chat/get-chat-session/${id}`, as(a.key))).status).toBe(404);
    const kept = await s.call('GET', `/api/chat/get-chat-session/${id}?include_deleted=true`, as(a.key));
    expect(kept.status).toBe(200);
    expect(kept.json.deleted).toBe(true);
    // A deleted session cannot be changed.
    expect((await s.call('PUT', '/api/chat/rename-chat-session', as(a.key), { chat_session_id: id, name: 'again' })).status).toBe(404);

    expect((await s.call('DELETE', `/api/chat/delete-chat-session/${id}?hard_delete=true`, as(a.key))).status).toBe(200);
    expect((await s.call('GET', `/api/chat/get-chat-session/${id}?include_deleted=true`, as(a.key))).status).toBe(404);
    const rows = await s.db.withTenant(a.tenantId, (sql) => sql.query(`SELECT 1 FROM core.chat_sessions WHERE session_id = $1`, [id]));
    expect(rows.rows).toHaveLength(0);
  });

  it('deletes all of the caller\'s sessions and no one else\'s', async () => {
    const own = await s.key(a.tenantId);
    const other = await s.key(a.tenantId);
    const mine = [await newSession(own), await newSession(own)];
    const theirs = await newSession(other);
    expect((await s.call('DELETE', '/api/chat/delete-all-chat-sessions', as(own))).status).toBe(200);
    expect((await s.call('GET', '/api/chat/get-user-chat-sessions', as(own))).json.sessions).toEqual([]);
    expect((await s.call('GET', `/api/chat/get-chat-session/${mine[0]}?include_deleted=true`, as(own))).json.deleted).toBe(true);
    expect((await s.call('GET', '/api/chat/get-user-chat-sessions', as(other))).json.sessions.map((x: { id: string }) => x.id)).toEqual([theirs]);
  });

  it('holds a tenant to 200 personas, concurrent creates included, and frees a place when one is deleted', async () => {
    const t = await s.tenant();
    const create = (n: number) => s.call('POST', '/api/persona', as(t.key), { name: `P${n}` });
    // In parallel, 20 at a time: the count is taken under a lock, so the limit is never overshot.
    const made: number[] = [];
    for (let round = 0; round < 11; round++) {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => create(round * 20 + i)));
      for (const r of answers) if (r.status === 201) made.push(r.json.id as number);
      for (const r of answers) if (r.status !== 201) expect([r.status, r.json]).toEqual([409, { detail: expect.stringMatching(/at most 200 personas/) }]);
    }
    expect(made).toHaveLength(200);
    expect((await s.call('GET', '/api/persona', as(t.key))).json).toHaveLength(201);
    expect((await s.call('DELETE', `/api/persona/${made[0]}`, as(t.key))).status).toBe(204);
    expect((await create(999)).status).toBe(201);
    expect((await create(1000)).status).toBe(409);
  });

  it('holds an owner to 10,000 live sessions, concurrent creates and seeds included; a deleted one frees its place', async () => {
    const t = await s.tenant();
    const first = await newSession(t.key);
    const owner = (await s.db.withTenant(t.tenantId, (sql) => sql.query<{ owner: string }>(`SELECT owner FROM core.chat_sessions WHERE session_id = $1`, [first]))).rows[0]!.owner;
    // Written directly up to 10 below the cap (the cap is the real one, 10,000); deleted sessions are not counted.
    await s.db.withTenant(t.tenantId, async (sql) => {
      await sql.query(`INSERT INTO core.chat_sessions (tenant_id, session_id, owner, persona_id) SELECT $1, gen_random_uuid(), $2, 0 FROM generate_series(1, 9989)`, [t.tenantId, owner]);
      await sql.query(`INSERT INTO core.chat_sessions (tenant_id, session_id, owner, persona_id, deleted_at) SELECT $1, gen_random_uuid(), $2, 0, now() FROM generate_series(1, 5)`, [t.tenantId, owner]);
    });
    // 20 at once, half created and half seeded: the count is taken under a lock, so exactly 10 get through.
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      i % 2 === 0
        ? s.call('POST', '/api/chat/create-chat-session', as(t.key), { persona_id: 0 })
        : s.call('POST', '/api/chat/seed-chat-session', as(t.key), { persona_id: 0, message: 'hello' })));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(10);
    for (const r of answers.filter((x) => x.status !== 200)) expect([r.status, r.json]).toEqual([409, { detail: expect.stringMatching(/10,000 chat sessions, the most one may have/) }]);
    const live = async () => (await s.db.withTenant(t.tenantId, (sql) => sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM core.chat_sessions WHERE owner = $1 AND deleted_at IS NULL`, [owner]))).rows[0]!.n;
    expect(await live()).toBe(10_000);
    // Another key of the tenant is another owner, with its own room.
    expect((await s.call('POST', '/api/chat/create-chat-session', as(await s.key(t.tenantId)), { persona_id: 0 })).status).toBe(200);
    expect((await s.call('DELETE', `/api/chat/delete-chat-session/${first}`, as(t.key))).status).toBe(200);
    expect((await s.call('POST', '/api/chat/create-chat-session', as(t.key), { persona_id: 0 })).status).toBe(200);
    expect((await s.call('POST', '/api/chat/create-chat-session', as(t.key), { persona_id: 0 })).status).toBe(409);
    expect(await live()).toBe(10_000);
  });

  it('lets administrators manage personas; members and read-only keys may only read', async () => {
    const listed = await s.call('GET', '/api/persona', as(a.key));
    expect(listed.status).toBe(200);
    expect(listed.json[0]).toMatchObject({ id: 0, is_default: true, tool_ids: [1] });

    const member = await s.user(a.tenantId, 'member');
    const denied = await s.call('POST', '/api/persona', as(member.token), { name: 'Nope' });
    expect(denied.status).toBe(403);
    expect(denied.json).toEqual({ detail: 'administrators only' });
    expect((await s.call('GET', '/api/persona/0', as(member.token))).status).toBe(200);

    const created = await s.call('POST', '/api/persona', as(a.key), { name: 'Legal', instructions: 'Answer for lawyers.', tool_ids: [1], source_types: ['web'], temperature: 0.2 });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: 'Legal', tool_ids: [1], source_types: ['web'], is_default: false });
    const pid = created.json.id as number;
    expect(pid).toBeGreaterThan(0);
    expect((await s.call('POST', '/api/persona', as(a.key), { name: 'Bad', tool_ids: [99] })).status).toBe(400);
    expect((await s.call('POST', '/api/persona', as(a.key), { name: 'Bad', extra: 1 })).status).toBe(422);
    // A tool id twice, or one below 1: 422 naming the field.
    for (const tool_ids of [[1, 1], [-1], [0]]) {
      const bad = await s.call('POST', '/api/persona', as(a.key), { name: 'Bad', tool_ids });
      expect([bad.status, bad.json.detail[0].loc.slice(0, 2)]).toEqual([422, ['body', 'tool_ids']]);
    }
    const repeated = await s.call('POST', '/api/chat/send-chat-message', as(a.key), { message: 'hi', chat_session_id: '00000000-0000-4000-8000-000000000000', allowed_tool_ids: [1, 1] });
    expect([repeated.status, repeated.json.detail[0].loc]).toEqual([422, ['body', 'allowed_tool_ids']]);

    // Personas serve every workspace of the tenant: a key bound to one workspace, or to some memories, reads them and
    // changes none.
    for (const bound of [await s.key(a.tenantId, { workspace_id: a.workspaceId }), await s.key(a.tenantId, { scopes: { memories: [a.memoryId] } })]) {
      expect((await s.call('GET', `/api/persona/${pid}`, as(bound))).status).toBe(200);
      for (const [method, path, body] of [['POST', '/api/persona', { name: 'Bound' }], ['PATCH', `/api/persona/${pid}`, { instructions: 'changed by a bound key' }], ['DELETE', `/api/persona/${pid}`, undefined]] as const) {
        const r = await s.call(method, path, as(bound), body);
        expect({ method, status: r.status, detail: r.json.detail }).toEqual({ method, status: 403, detail: expect.stringMatching(/^tenant-wide administrators only/) });
      }
    }
    expect((await s.call('GET', `/api/persona/${pid}`, as(a.key))).json.instructions).toBe('Answer for lawyers.');

    const patched = await s.call('PATCH', `/api/persona/${pid}`, as(a.key), { description: 'for the legal team', source_types: null });
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({ name: 'Legal', description: 'for the legal team', source_types: null, instructions: 'Answer for lawyers.' });

    // Another tenant neither sees nor uses it.
    expect((await s.call('GET', `/api/persona/${pid}`, as(b.key))).status).toBe(404);
    expect((await s.call('POST', '/api/chat/create-chat-session', as(b.key), { persona_id: pid })).status).toBe(400);

    const sid = await newSession(member.token, pid);
    const d = await s.call('GET', `/api/chat/get-chat-session/${sid}`, as(member.token));
    expect(d.json).toMatchObject({ persona_id: pid, persona_name: 'Legal' });
    // A signed-in user's sessions are the user's, not the tenant key's.
    expect((await s.call('GET', `/api/chat/get-chat-session/${sid}`, as(a.key))).status).toBe(404);

    expect((await s.call('DELETE', `/api/persona/${pid}`, as(a.key))).status).toBe(204);
    expect((await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: pid })).status).toBe(400);
    // The session made with it still reads, naming it.
    expect((await s.call('GET', `/api/chat/get-chat-session/${sid}`, as(member.token))).json.persona_name).toBe('Legal');
    expect((await s.call('DELETE', '/api/persona/0', as(a.key))).status).toBe(400);
    // Nor changed: it is the same in every tenant.
    const renamed = await s.call('PATCH', '/api/persona/0', as(a.key), { name: 'hacked' });
    expect([renamed.status, renamed.json.detail]).toEqual([400, expect.stringMatching(/cannot be changed/)]);
    expect((await s.call('GET', '/api/persona/0', as(a.key))).json.name).toBe('Lore');

    const readOnly = await s.key(a.tenantId, { scopes: { access: 'read' } });
    expect((await s.call('GET', '/api/chat/get-user-chat-sessions', as(readOnly))).status).toBe(200);
    const refused = await s.call('POST', '/api/chat/create-chat-session', as(readOnly), { persona_id: 0 });
    expect([refused.status, refused.json]).toEqual([403, { detail: 'the key is read-only' }]);
    // The gateway's other refusals on core's paths are spec 2's `{detail}` too: a scope without the module, no key.
    const memoryOnly = await s.key(a.tenantId, { scopes: { modules: ['memory'] } });
    for (const path of ['/api/chat/get-user-chat-sessions', '/api/manage/admin/connector/status']) {
      const outOfScope = await s.call('GET', path, as(memoryOnly));
      expect([path, outOfScope.status, outOfScope.json]).toEqual([path, 403, { detail: expect.stringMatching(/scope does not include/) }]);
    }
    const noKey = await s.call('GET', '/api/chat/get-user-chat-sessions', {});
    expect([noKey.status, noKey.json]).toEqual([401, { detail: expect.any(String) }]);
  });

  it('trusts only the gateway\'s signed identity: none, or one signed with another secret, is 401 with detail', async () => {
    const direct = (headers: Record<string, string>) => http(s.coreServer.url, 'GET', '/api/chat/get-user-chat-sessions', { headers });
    const none = await direct({});
    expect(none.status).toBe(401);
    expect(none.json).toEqual({ detail: expect.any(String) });
    const forged = await new IdentitySigner('another-secret-of-at-least-32-characters!').sign({
      tenant_id: a.tenantId, workspace_id: a.workspaceId, memory_id: a.memoryId, credential: 'ck_live', subject: a.keyId, role: 'tenant_admin',
    });
    expect((await direct({ [IDENTITY_HEADER]: forged })).status).toBe(401);
    // A client cannot send its own identity header through the gateway either: the gateway replaces it, so B's
    // key still lists B's sessions, even with a header signed by the real secret naming tenant A.
    const aSession = await newSession(a.key);
    const real = await s.gateway.signer.sign({ tenant_id: a.tenantId, workspace_id: a.workspaceId, memory_id: a.memoryId, credential: 'ck_live', subject: a.keyId, role: 'tenant_admin' });
    const smuggled = await s.call('GET', '/api/chat/get-user-chat-sessions', { ...as(b.key), [IDENTITY_HEADER]: real });
    expect(smuggled.status).toBe(200);
    expect(smuggled.json.sessions.map((x: { id: string }) => x.id)).not.toContain(aSession);
    // ...while the same header sent to core directly is A's identity (so the check above could fail).
    expect((await direct({ [IDENTITY_HEADER]: real })).json.sessions.map((x: { id: string }) => x.id)).toContain(aSession);
  });

  it('serves its OpenAPI document through the gateway without a credential', async () => {
    const r = await s.call('GET', '/api/openapi.json', {});
    expect(r.status).toBe(200);
    expect(r.json.openapi).toBe('3.1.0');
    expect(r.json.info.version).toBe('0.0.0-dev');
    expect(Object.keys(r.json.paths)).toEqual(expect.arrayContaining(['/api/chat/create-chat-session', '/api/chat/get-user-chat-sessions', '/api/persona']));
    // Spec 2's booleans and integers are documented as such (until 2026-11-30 as strings, defaults "true"), and are
    // still read from their text: true/false/1/0, digits, and anything else a 422 naming the parameter.
    const schemaOf = (path: string, method: string, name: string) => (r.json.paths[path][method].parameters as Array<{ name: string; schema: unknown }>).find((p) => p.name === name)!.schema;
    expect(schemaOf('/api/chat/get-user-chat-sessions', 'get', 'only_non_project_chats')).toEqual({ type: 'boolean', default: true });
    expect(schemaOf('/api/chat/get-user-chat-sessions', 'get', 'project_id')).toEqual({ anyOf: [expect.objectContaining({ type: 'integer' }), { type: 'null' }] });
    expect(schemaOf('/api/chat/delete-chat-session/{session_id}', 'delete', 'hard_delete')).toEqual({ type: ['boolean', 'null'] });
    expect(schemaOf('/api/chat/max-selected-document-tokens', 'get', 'persona_id')).toEqual(expect.objectContaining({ type: 'integer' }));
    expect(schemaOf('/api/chat/remove-chat-message-feedback', 'delete', 'chat_message_id')).toEqual(expect.objectContaining({ type: 'integer' }));
    expect((await s.call('GET', '/api/chat/get-user-chat-sessions?only_non_project_chats=0&include_failed_chats=1&project_id=null', as(a.key))).status).toBe(200);
    expect((await s.call('GET', '/api/chat/max-selected-document-tokens?persona_id=0', as(a.key))).status).toBe(200);
    const bad = await s.call('GET', '/api/chat/get-user-chat-sessions?only_non_project_chats=yes&project_id=x', as(a.key));
    expect([bad.status, bad.json.detail]).toEqual([422, [
      { loc: ['query', 'project_id'], msg: 'must be an integer or null', type: 'value_error' },
      { loc: ['query', 'only_non_project_chats'], msg: 'must be true or false', type: 'value_error' },
    ]]);
    const tooBig = await s.call('GET', '/api/chat/max-selected-document-tokens?persona_id=9999999999', as(a.key));
    expect([tooBig.status, tooBig.json.detail]).toEqual([422, [{ loc: ['query', 'persona_id'], msg: 'must be a 32-bit integer', type: 'value_error' }]]);
  });
});
