import { startAgentsStack, type AgentsStack } from './harness';

let s: AgentsStack;
beforeAll(async () => {
  s = await startAgentsStack();
});
afterAll(async () => {
  await s?.close();
});

describe('the agents service through the gateway', () => {
  it('answers GET /api/health without a credential, healthy while its database answers', async () => {
    const res = await s.call('GET', '/api/health', {});
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: 'healthy', timestamp: expect.any(String), version: '1.0.0', environment: 'test' });
    expect(Number.isNaN(Date.parse(res.json.timestamp as string))).toBe(false);
  });

  it('describes itself at GET / with where its document and health are', async () => {
    const res = await s.call('GET', '/', {});
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ name: 'Lore agents API', version: '1.0.0', environment: 'test', docs_url: '/api/agents/openapi.json', health_url: '/api/health' });
  });

  it('serves its OpenAPI document through the gateway without a credential', async () => {
    const res = await s.call('GET', '/api/agents/openapi.json', {});
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ openapi: '3.1.0', info: { version: '1.0.0' } });
    expect(Object.keys(res.json.paths as object)).toEqual(expect.arrayContaining(['/api/health', '/']));
  });

  it('reports unhealthy, still 200, when its database does not answer', async () => {
    const other = await startAgentsStack();
    try {
      await other.db.close();
      const res = await other.call('GET', '/api/health', {});
      expect(res.status).toBe(200);
      expect(res.json.status).toBe('unhealthy');
    } finally {
      await other.gateway.close();
      await other.agentsServer.close();
      await other.agents.close();
      await other.streams.close();
      await other.database.drop();
    }
  });
});
