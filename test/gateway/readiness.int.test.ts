import { createServer, type Server } from 'node:http';
import { freshDatabase, type TestDatabase } from '../support/infra';
import { uid } from './harness';
import { freePort, spawnGateway, type GatewayProcess } from './processes';

jest.setTimeout(180_000);

/** The gateway process's /readyz reports its upstreams, and a down one leaves the gateway ready (docs/gateway.md). */
describe('gateway readiness and its upstreams', () => {
  let database: TestDatabase;
  let gateway: GatewayProcess;
  let mcp: Server;

  beforeAll(async () => {
    database = await freshDatabase('lore_gwready');
    // A ready upstream, and for the graph a port nothing listens on.
    mcp = createServer((req, res) => {
      res.writeHead(req.url === '/readyz' ? 200 : 404, { 'content-type': 'application/json' }).end('{"status":"ready"}');
    });
    await new Promise<void>((resolve) => mcp.listen(0, '127.0.0.1', resolve));
    const mcpPort = (mcp.address() as { port: number }).port;
    const closedPort = await freePort();
    gateway = await spawnGateway(database, {
      GATEWAY_REDIS_PREFIX: `gwready:${uid()}:`,
      GATEWAY_UPSTREAM_GRAPH: `http://127.0.0.1:${closedPort}`,
      GATEWAY_UPSTREAM_MCP: `http://127.0.0.1:${mcpPort}`,
    });
  });
  afterAll(async () => {
    await gateway?.stop();
    await new Promise((resolve) => mcp?.close(resolve));
    await database?.drop();
  });

  it('reports the unreachable graph upstream and the ready mcp one in /readyz details, and stays ready', async () => {
    const r = await fetch(`${gateway.opsUrl}/readyz`);
    const body = (await r.json()) as { status: string; checks: Record<string, unknown> };
    expect(r.status).toBe(200);
    expect(body.status).toBe('ready');
    expect(body.checks.upstreams).toEqual({
      ok: true,
      degraded: true,
      graph: { reachable: false, error: expect.stringContaining('ECONNREFUSED'), checked_at: expect.any(String) },
      mcp: { reachable: true, status: 200, checked_at: expect.any(String) },
    });
  });
});
