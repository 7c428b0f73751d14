import { useEmbedded } from '../support/embedded';
import { SEARCH_TOOLS, connectMcp, rawInitialize, type McpClient } from './client';

jest.setTimeout(120_000);

/**
 * Embedded mode (`npm start`): the MCP server on its socket behind the in-process gateway, its tools calling the API
 * back through the public listener with the development key.
 */
describe('MCP tool server in embedded mode', () => {
  const embedded = useEmbedded('mcp-embedded');
  let c: McpClient;
  beforeAll(async () => {
    c = await connectMcp(embedded.lore.url, embedded.lore.credentials.api_key);
  });
  afterAll(async () => {
    await c?.close();
  });

  it('serves /health open and refuses /mcp without a key or with a wrong one', async () => {
    const health = await fetch(`${embedded.lore.url}/health`);
    expect(await health.json()).toEqual({ status: 'ok', service: 'mcp' });
    expect(await rawInitialize(embedded.lore.url, {})).toMatchObject({ status: 401, json: { success: false, error: 'Missing x-api-key header' } });
    expect((await rawInitialize(embedded.lore.url, { 'x-api-key': 'ck_live_wrong' })).status).toBe(401);
  });

  it('lists the search and research tools', async () => {
    const names = (await c.client.listTools()).tools.map((t) => t.name);
    for (const name of SEARCH_TOOLS) expect(names).toContain(name);
  });

  it('runs company search, people search and research tools through the in-process gateway', async () => {
    const started = await c.call('start_workflow', { prompt: 'logistics companies in Rotterdam' });
    expect(started).toMatchObject({ success: true, data: { status: 'processing', thread_id: expect.any(String) } });
    const thread = started.data.thread_id as string;
    expect(await c.call('get_status_workflows', { workflow_id: thread })).toMatchObject({ success: true, data: { thread_id: thread } });
    expect(await c.call('get_status_workflows', { workflow_id: '' })).toMatchObject({ success: false, error: expect.stringMatching(/workflow_id/) });
    expect(await c.call('get_lists')).toMatchObject({ success: true, data: { success: true, data: expect.any(Array) } });
    expect(await c.call('company_database_search', { filter: { industry: 'logistics' } })).toMatchObject({ success: true, data: { data: expect.any(Array) } });
    expect(await c.call('stop', { workflow_id: thread })).toMatchObject({ success: true, data: { thread_id: thread } });

    const people = await c.call('start_people_search', { prompt: 'heads of logistics in Rotterdam' });
    expect(people).toMatchObject({ success: true, data: { thread_id: expect.any(String) } });
    expect(await c.call('get_status_people_search', { workflow_id: people.data.thread_id })).toMatchObject({ success: true });
    expect(await c.call('people_database_search', { limit: 101 })).toMatchObject({ success: false, error: expect.stringMatching(/limit/) });
    expect(await c.call('stop_people_search', { workflow_id: people.data.thread_id })).toMatchObject({ success: true });

    const research = await c.call('start_research', { query: 'ports of the North Sea', max_researcher_iterations: 1, max_concurrent_research_units: 1 });
    expect(research).toMatchObject({ success: true, data: { thread_id: expect.any(String) } });
    expect(await c.call('get_result_of_search', { research_id: research.data.thread_id })).toMatchObject({ success: true, data: { serviceId: 'mcp' } });
    expect(await c.call('get_active_workflow')).toMatchObject({ success: true, data: { workflows: expect.any(Array) } });
    expect(await c.call('start_research', { query: 'x', max_researcher_iterations: 11 })).toMatchObject({ success: false, error: expect.stringMatching(/max_researcher_iterations/) });
    expect(await c.call('get_result_of_search', { research_id: '00000000-0000-4000-8000-000000000000' })).toMatchObject({ success: false, error: expect.stringMatching(/^HTTP 404/) });
  });
});
