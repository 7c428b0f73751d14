/**
 * Chat projects through the gateway: a caller's own folders of sessions, the `project_id` filter of spec 2's
 * sessions listing, sessions moved in and out with PATCH, and a deleted project's sessions kept outside any project.
 */
import { closeIdleHttpConnections } from '../support/http';
import type { TenantFixture } from '../gateway/harness';
import { startCoreStack, type CoreStack } from './harness';

describe('core: chat projects', () => {
  let s: CoreStack;
  let a: TenantFixture;
  let b: TenantFixture;
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  const ids = (r: { json: { sessions: Array<{ id: string }> } }) => r.json.sessions.map((x) => x.id);

  beforeAll(async () => {
    s = await startCoreStack();
    a = await s.tenant();
    b = await s.tenant();
  });
  afterAll(async () => {
    await s?.close();
    closeIdleHttpConnections();
  });

  it('files sessions in projects, filters the listing by them, and keeps the sessions of a deleted project', async () => {
    const created = await s.call('POST', '/api/chat/projects', as(a.key), { name: 'Launch', description: 'the spring launch' });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: 'Launch', description: 'the spring launch', session_count: 0 });
    const pid = created.json.id as number;

    const inProject = (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 0, project_id: pid })).json.chat_session_id as string;
    const outside = (await s.call('POST', '/api/chat/create-chat-session', as(a.key), { persona_id: 0 })).json.chat_session_id as string;
    expect(ids(await s.call('GET', `/api/chat/get-user-chat-sessions?project_id=${pid}`, as(a.key)))).toEqual([inProject]);
    // Without project_id, project sessions are left out unless only_non_project_chats=false.
    const plain = ids(await s.call('GET', '/api/chat/get-user-chat-sessions', as(a.key)));
    expect(plain).toContain(outside);
    expect(plain).not.toContain(inProject);
    expect(ids(await s.call('GET', '/api/chat/get-user-chat-sessions?only_non_project_chats=false', as(a.key)))).toEqual(expect.arrayContaining([inProject, outside]));
    expect((await s.call('GET', `/api/chat/get-chat-session/${inProject}`, as(a.key))).json.project_id).toBe(pid);

    // Moving a session in and out.
    expect((await s.call('PATCH', `/api/chat/chat-session/${outside}`, as(a.key), { project_id: pid })).status).toBe(200);
    expect(ids(await s.call('GET', `/api/chat/get-user-chat-sessions?project_id=${pid}`, as(a.key))).sort()).toEqual([inProject, outside].sort());
    expect((await s.call('GET', `/api/chat/projects/${pid}`, as(a.key))).json.session_count).toBe(2);
    expect((await s.call('PATCH', `/api/chat/chat-session/${outside}`, as(a.key), { project_id: null })).status).toBe(200);
    expect((await s.call('GET', `/api/chat/get-chat-session/${outside}`, as(a.key))).json.project_id).toBeNull();

    const renamed = await s.call('PATCH', `/api/chat/projects/${pid}`, as(a.key), { name: 'Spring launch' });
    expect(renamed.json).toMatchObject({ name: 'Spring launch', description: 'the spring launch' });
    expect((await s.call('GET', '/api/chat/projects', as(a.key))).json.projects.map((p: { id: number }) => p.id)).toContain(pid);

    expect((await s.call('DELETE', `/api/chat/projects/${pid}`, as(a.key))).status).toBe(204);
    expect((await s.call('GET', `/api/chat/projects/${pid}`, as(a.key))).status).toBe(404);
    const kept = await s.call('GET', `/api/chat/get-chat-session/${inProject}`, as(a.key));
    expect(kept.status).toBe(200);
    expect(kept.json.project_id).toBeNull();
    expect(ids(await s.call('GET', '/api/chat/get-user-chat-sessions', as(a.key)))).toContain(inProject);
  });

  it('keeps projects to their owner: another key or tenant gets 404 and cannot file sessions in them', async () => {
    const pid = (await s.call('POST', '/api/chat/projects', as(a.key), { name: 'Private' })).json.id as number;
    const other = await s.key(a.tenantId);
    for (const key of [other, b.key]) {
      expect((await s.call('GET', `/api/chat/projects/${pid}`, as(key))).status).toBe(404);
      expect((await s.call('GET', '/api/chat/projects', as(key))).json.projects.map((p: { id: number }) => p.id)).not.toContain(pid);
      const r = await s.call('POST', '/api/chat/create-chat-session', as(key), { persona_id: 0, project_id: pid });
      expect(r.status).toBe(404);
      expect(r.json).toEqual({ detail: expect.any(String) });
      const made = await s.call('POST', '/api/chat/create-chat-session', as(key), { persona_id: 0 });
      expect(made.status).toBe(200);
      const own = made.json.chat_session_id as string;
      expect((await s.call('PATCH', `/api/chat/chat-session/${own}`, as(key), { project_id: pid })).status).toBe(404);
      expect((await s.call('DELETE', `/api/chat/projects/${pid}`, as(key))).status).toBe(404);
    }
    expect((await s.call('GET', `/api/chat/projects/${pid}`, as(a.key))).status).toBe(200);
  });

  it('still has the default persona after a new tenant\'s first chat request was refused inside its transaction', async () => {
    const c = await s.tenant();
    // The first request of the tenant writes persona 0; the refusal rolls its own transaction back, not that write.
    expect((await s.call('POST', '/api/chat/create-chat-session', as(c.key), { persona_id: 0, project_id: 424242 })).status).toBe(404);
    expect((await s.call('POST', '/api/chat/create-chat-session', as(c.key), { persona_id: 0 })).status).toBe(200);
    expect((await s.call('GET', '/api/persona/0', as(c.key))).status).toBe(200);
  });

  it('refuses bad input with spec 2\'s shapes', async () => {
    expect((await s.call('POST', '/api/chat/projects', as(a.key), { name: '' })).status).toBe(422);
    expect((await s.call('POST', '/api/chat/projects', as(a.key), { name: 'x', extra: 1 })).status).toBe(422);
    const bad = await s.call('GET', '/api/chat/projects/abc', as(a.key));
    expect(bad.status).toBe(422);
    expect(bad.json.detail[0].loc).toEqual(['path', 'project_id']);
    expect((await s.call('GET', '/api/chat/get-user-chat-sessions?project_id=x', as(a.key))).status).toBe(422);
    expect((await s.call('PATCH', '/api/chat/projects/1', as(a.key), {})).status).toBe(422);
  });
});
