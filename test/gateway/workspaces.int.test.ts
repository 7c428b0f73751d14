import { freshDatabase, type TestDatabase } from '../support/infra';
import { adminCall, http, makeKey, makeTenant, startEcho, startGateway, uid, type EchoUpstream, type GatewayUnderTest, type TenantFixture } from './harness';

jest.setTimeout(120_000);

describe('gateway workspaces: the list wrapper, the active workspace, workspace-pinned keys', () => {
  let database: TestDatabase;
  let g: GatewayUnderTest;
  let echo: EchoUpstream;
  let t: TenantFixture;
  const as = (key: string) => ({ 'x-api-key': key });

  /** The memory a forwarded memory request acts on, as the upstream sees it in the signed identity. */
  async function memoryOfSearch(key: string, query = ''): Promise<{ status: number; memory_id?: string; workspace_id?: string }> {
    const r = await http(g.publicUrl, 'POST', `/api/v1/memory/search${query}`, { headers: as(key), body: { query: 'q' } });
    if (r.status !== 200) return { status: r.status };
    const identity = await g.signer.verify(String(r.json.headers['x-lore-identity']));
    return { status: 200, memory_id: identity.memory_id, workspace_id: identity.workspace_id };
  }

  beforeAll(async () => {
    database = await freshDatabase('lore_gwws');
    echo = await startEcho();
    g = await startGateway(database, { upstreams: { graph: echo.url } }, { redisPrefix: `gwws:${uid()}:` });
    t = await makeTenant(g);
  });
  afterAll(async () => {
    await g?.close();
    await echo?.close();
    await database?.drop();
  });

  it('lists workspaces in the spec 1 wrapper: workspaces, active_workspace_id, default_workspace_id', async () => {
    const r = await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: as(t.key) });
    expect(r.status).toBe(200);
    expect(Object.keys(r.json).sort()).toEqual(['active_workspace_id', 'default_workspace_id', 'workspaces']);
    expect(r.json.workspaces).toHaveLength(1);
    const [ws] = r.json.workspaces;
    expect(Object.keys(ws).sort()).toEqual(['is_default', 'name', 'primary_memory_id', 'slug', 'workspace_id']);
    expect(ws).toEqual({
      workspace_id: expect.any(String),
      name: expect.any(String),
      slug: expect.stringMatching(/^[a-z0-9-]+$/),
      is_default: true,
      primary_memory_id: expect.any(String),
    });
    expect(ws.workspace_id.length).toBeGreaterThan(0);
    expect(ws.primary_memory_id.length).toBeGreaterThan(0);
    // A new tenant's default workspace is also the active one.
    expect(r.json.default_workspace_id).toBe(ws.workspace_id);
    expect(r.json.active_workspace_id).toBe(ws.workspace_id);
  });

  it('switches the active workspace; a request naming no memory then uses the new active workspace\'s memory', async () => {
    const tenant = await makeTenant(g);
    const before = await memoryOfSearch(tenant.key);
    expect(before).toEqual({ status: 200, memory_id: tenant.memoryId, workspace_id: tenant.workspaceId });

    const created = await http(g.publicUrl, 'POST', '/api/v1/workspaces', { headers: as(tenant.key), body: { name: `Research ${uid()}` } });
    expect(created.status).toBe(201);
    const second = created.json;
    expect(second).toMatchObject({ is_default: false, workspace_id: expect.any(String), primary_memory_id: expect.any(String) });
    expect(second.primary_memory_id).not.toBe(tenant.memoryId);
    // Creating a workspace does not switch to it.
    expect((await memoryOfSearch(tenant.key)).memory_id).toBe(tenant.memoryId);

    const activated = await http(g.publicUrl, 'POST', `/api/v1/workspaces/${second.workspace_id}/activate`, { headers: as(tenant.key) });
    expect(activated.status).toBe(200);
    expect(activated.json.active_workspace_id).toBe(second.workspace_id);
    expect(activated.json.default_workspace_id).toBe(tenant.workspaceId);
    expect(activated.json.workspaces.map((w: { workspace_id: string; is_default: boolean }) => [w.workspace_id, w.is_default]).sort()).toEqual(
      [[tenant.workspaceId, true], [second.workspace_id, false]].sort(),
    );
    const listed = await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: as(tenant.key) });
    expect(listed.json).toEqual(activated.json);

    // No memory named: the active workspace's primary memory.
    expect(await memoryOfSearch(tenant.key)).toEqual({ status: 200, memory_id: second.primary_memory_id, workspace_id: second.workspace_id });
    // Naming one still works, and projects follow the active workspace too.
    expect(await memoryOfSearch(tenant.key, `?memory_id=${tenant.memoryId}`)).toEqual({ status: 200, memory_id: tenant.memoryId, workspace_id: tenant.workspaceId });
    const project = await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: as(tenant.key), body: { name: `In second ${uid()}` } });
    expect(project.status).toBe(201);
    expect(project.json.workspace_id).toBe(second.workspace_id);

    // And back.
    expect((await http(g.publicUrl, 'POST', `/api/v1/workspaces/${tenant.workspaceId}/activate`, { headers: as(tenant.key) })).status).toBe(200);
    expect(await memoryOfSearch(tenant.key)).toEqual({ status: 200, memory_id: tenant.memoryId, workspace_id: tenant.workspaceId });
  });

  it('keeps a key pinned to one workspace out of every other workspace: its projects and memory are 404', async () => {
    const tenant = await makeTenant(g);
    const other = await http(g.publicUrl, 'POST', '/api/v1/workspaces', { headers: as(tenant.key), body: { name: `Other ${uid()}` } });
    expect(other.status).toBe(201);
    const otherWs = other.json.workspace_id as string;
    const otherMemory = other.json.primary_memory_id as string;
    const inOther = await http(g.publicUrl, 'POST', `/api/v1/projects?workspace_id=${otherWs}`, { headers: as(tenant.key), body: { name: `Theirs ${uid()}` } });
    expect(inOther.status).toBe(201);
    expect(inOther.json.workspace_id).toBe(otherWs);
    const inHome = await http(g.publicUrl, 'POST', '/api/v1/projects', { headers: as(tenant.key), body: { name: `Ours ${uid()}` } });
    expect(inHome.json.workspace_id).toBe(tenant.workspaceId);

    const pinned = await makeKey(g, tenant.tenantId, { workspace_id: tenant.workspaceId });
    const h = as(pinned.key);
    // Its own workspace works.
    expect((await http(g.publicUrl, 'GET', `/api/v1/projects/${inHome.json.project_id}`, { headers: h })).status).toBe(200);
    expect(await memoryOfSearch(pinned.key)).toEqual({ status: 200, memory_id: tenant.memoryId, workspace_id: tenant.workspaceId });
    const list = await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: h });
    expect(list.json.workspaces.map((w: { workspace_id: string }) => w.workspace_id)).toEqual([tenant.workspaceId]);
    const projects = await http(g.publicUrl, 'GET', '/api/v1/projects', { headers: h });
    expect(projects.json.projects.map((p: { project_id: string }) => p.project_id)).toEqual([inHome.json.project_id]);

    // The other workspace's project and memory, however named, do not exist for it.
    const refused: Array<[string, string, string]> = [
      ['GET', `/api/v1/projects/${inOther.json.project_id}`, 'project by id'],
      ['GET', `/api/v1/projects/${inOther.json.project_id}?workspace_id=${otherWs}`, 'project with its workspace'],
      ['GET', `/api/v1/projects?workspace_id=${otherWs}`, 'project list of the workspace'],
      ['POST', `/api/v1/memory/search?memory_id=${otherMemory}`, 'memory by id'],
      ['POST', `/api/v1/memory/search?workspace_id=${otherWs}`, 'memory of the workspace'],
      ['POST', `/api/v1/memory/ingest?memory_id=${otherMemory}`, 'ingest into the memory'],
      ['POST', `/api/v1/workspaces/${otherWs}/activate`, 'activating the workspace'],
    ];
    for (const [method, path, label] of refused) {
      const r = await http(g.publicUrl, method, path, { headers: h, body: method === 'POST' ? { query: 'q' } : undefined });
      expect({ label, status: r.status }).toEqual({ label, status: 404 });
    }
    // Switching the tenant's active workspace does not move a pinned key.
    expect((await http(g.publicUrl, 'POST', `/api/v1/workspaces/${otherWs}/activate`, { headers: as(tenant.key) })).status).toBe(200);
    expect(await memoryOfSearch(pinned.key)).toEqual({ status: 200, memory_id: tenant.memoryId, workspace_id: tenant.workspaceId });
    expect((await http(g.publicUrl, 'GET', `/api/v1/projects/${inOther.json.project_id}`, { headers: h })).status).toBe(404);
  });

  it('refuses a key scoped to some memories the workspace changes that reach beyond them (403), and leaves the tenant as it was', async () => {
    const tenant = await makeTenant(g);
    const other = await http(g.publicUrl, 'POST', '/api/v1/workspaces', { headers: as(tenant.key), body: { name: `Other ${uid()}` } });
    const scoped = await makeKey(g, tenant.tenantId, { scopes: { memories: [tenant.memoryId] } });
    const created = await http(g.publicUrl, 'POST', '/api/v1/workspaces', { headers: as(scoped.key), body: { name: `By scoped ${uid()}` } });
    expect([created.status, created.json.error?.message]).toEqual([403, 'a key scoped to some memories cannot create workspaces']);
    const switched = await http(g.publicUrl, 'POST', `/api/v1/workspaces/${other.json.workspace_id}/activate`, { headers: as(scoped.key) });
    expect([switched.status, switched.json.error?.message]).toEqual([403, 'a key scoped to some memories cannot change the active workspace']);
    const after = await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: as(tenant.key) });
    expect(after.json.active_workspace_id).toBe(tenant.workspaceId);
    expect(after.json.workspaces).toHaveLength(2);
    // Its own memory it still uses.
    expect(await memoryOfSearch(scoped.key)).toEqual({ status: 200, memory_id: tenant.memoryId, workspace_id: tenant.workspaceId });
    // It lists only the workspace its memory is in: another's name and memory are not its to see. A key scoped to the
    // other workspace's memory sees that one, with it as the workspace it acts in.
    const listed = await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: as(scoped.key) });
    expect(listed.status).toBe(200);
    expect(listed.json.workspaces.map((w: { workspace_id: string }) => w.workspace_id)).toEqual([tenant.workspaceId]);
    expect(listed.json.active_workspace_id).toBe(tenant.workspaceId);
    const otherScoped = await makeKey(g, tenant.tenantId, { scopes: { memories: [other.json.primary_memory_id] } });
    const theirs = await http(g.publicUrl, 'GET', `/api/v1/workspaces?memory_id=${other.json.primary_memory_id}`, { headers: as(otherScoped.key) });
    expect(theirs.status).toBe(200);
    expect(theirs.json.workspaces.map((w: { workspace_id: string }) => w.workspace_id)).toEqual([other.json.workspace_id]);
    expect(theirs.json.active_workspace_id).toBe(other.json.workspace_id);
    // Naming no place, it acts in the workspace of its memory: ping, workspaces, projects and search answer.
    for (const path of ['/api/v1/pages/ping', '/api/v1/workspaces', '/api/v1/projects']) {
      expect({ path, status: (await http(g.publicUrl, 'GET', path, { headers: as(otherScoped.key) })).status }).toEqual({ path, status: 200 });
    }
    expect((await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: as(otherScoped.key) })).json.active_workspace_id).toBe(other.json.workspace_id);
    expect(await memoryOfSearch(otherScoped.key)).toEqual({ status: 200, memory_id: other.json.primary_memory_id, workspace_id: other.json.workspace_id });
    // Another administrator activating the other workspace takes neither key out of its memory.
    expect((await http(g.publicUrl, 'POST', `/api/v1/workspaces/${other.json.workspace_id}/activate`, { headers: as(tenant.key) })).status).toBe(200);
    expect(await memoryOfSearch(scoped.key)).toEqual({ status: 200, memory_id: tenant.memoryId, workspace_id: tenant.workspaceId });
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: as(scoped.key) })).status).toBe(200);
    expect(await memoryOfSearch(otherScoped.key)).toEqual({ status: 200, memory_id: other.json.primary_memory_id, workspace_id: other.json.workspace_id });
    // A key scoped to a memory that is no workspace's primary memory acts in that memory too.
    const extra = `mem_extra${uid().replace(/[^a-z0-9]/gi, '').slice(0, 12)}`;
    expect((await adminCall(g, 'PUT', `/internal/v1/tenants/${tenant.tenantId}/memories/${extra}`, { name: 'Extra', hostname: `${extra.replace(/_/g, '-').toLowerCase()}.memory.example`, workspace_id: other.json.workspace_id })).status).toBe(200);
    const extraScoped = await makeKey(g, tenant.tenantId, { scopes: { memories: [extra] } });
    expect((await http(g.publicUrl, 'GET', '/api/v1/pages/ping', { headers: as(extraScoped.key) })).status).toBe(200);
    expect(await memoryOfSearch(extraScoped.key)).toEqual({ status: 200, memory_id: extra, workspace_id: other.json.workspace_id });
    // What it names outside its memories stays refused.
    expect((await http(g.publicUrl, 'GET', `/api/v1/projects?workspace_id=${other.json.workspace_id}`, { headers: as(scoped.key) })).status).toBe(403);
    // A key is scoped only to memories of its tenant: none, or another tenant's, is 404 and makes no key.
    const stranger = await makeTenant(g);
    for (const memories of [['mem_doesnotexist'], [tenant.memoryId, stranger.memoryId]]) {
      const r = await adminCall(g, 'POST', `/internal/v1/tenants/${tenant.tenantId}/keys`, { type: 'live', name: 'scoped', scopes: { memories } });
      expect({ memories, status: r.status }).toEqual({ memories, status: 404 });
    }
    expect((await adminCall(g, 'POST', `/internal/v1/tenants/${tenant.tenantId}/keys`, { type: 'live', name: 'scoped', scopes: { memories: [tenant.memoryId] } })).status).toBe(201);
  });

  it('gives a workspace whose primary memory is deleted its oldest remaining memory, and a workspace left with none the next one put there', async () => {
    const tenant = await makeTenant(g);
    const primary = async () => {
      const r = await http(g.publicUrl, 'GET', '/api/v1/workspaces', { headers: as(tenant.key) });
      return (r.json.workspaces as Array<{ workspace_id: string; primary_memory_id: string }>).find((w) => w.workspace_id === tenant.workspaceId)!.primary_memory_id;
    };
    const memory = (name: string) => `mem_${name}${uid()}`;
    const put = async (id: string) => {
      const r = await adminCall(g, 'PUT', `/internal/v1/tenants/${tenant.tenantId}/memories/${id}`, { name: id, hostname: `${id.replace(/_/g, '-').toLowerCase()}.memory.example` });
      expect(r.status).toBe(200);
    };
    const remove = async (id: string, retain: boolean) => expect((await adminCall(g, 'DELETE', `/internal/v1/tenants/${tenant.tenantId}/memories/${id}?retain_data=${retain}`)).status).toBe(204);
    const [second, third, fourth] = [memory('second'), memory('third'), memory('fourth')];
    await put(second);
    await put(third);
    expect(await primary()).toBe(tenant.memoryId);
    await remove(tenant.memoryId, false);
    expect(await primary()).toBe(second);
    // A request naming no memory acts in the new primary at once.
    expect(await memoryOfSearch(tenant.key)).toEqual({ status: 200, memory_id: second, workspace_id: tenant.workspaceId });
    await remove(second, true);
    expect(await primary()).toBe(third);
    await remove(third, false);
    expect(await primary()).toBe('');
    await put(fourth);
    expect(await primary()).toBe(fourth);
    expect(await memoryOfSearch(tenant.key)).toEqual({ status: 200, memory_id: fourth, workspace_id: tenant.workspaceId });
  });
});
