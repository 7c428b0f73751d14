import { createServer, type Server } from 'node:http';
import type { UpstreamName } from '../config';
import { parseUpstream, type UpstreamTarget } from './proxy';
import { upstreamsCheck } from './upstream-health';

describe('upstreamsCheck', () => {
  let server: Server;
  let url: string;
  let readyzStatus = 200;
  let probes = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/base/readyz') probes++;
      res.writeHead(req.url === '/base/readyz' ? readyzStatus : 404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/base`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const targets = (specs: Partial<Record<UpstreamName, string>>) =>
    new Map(Object.entries(specs).map(([name, spec]) => [name as UpstreamName, parseUpstream(name, spec)] as [UpstreamName, UpstreamTarget]));

  it('asks /readyz under the base path, is not degraded while every upstream is ready, and reuses an answer within the cache period', async () => {
    let t = 0;
    const check = upstreamsCheck(targets({ graph: url }), { cacheMs: 5_000, now: () => t });
    readyzStatus = 200;
    probes = 0;
    expect(await check()).toEqual({ ok: true, details: { degraded: false, graph: { reachable: true, status: 200, checked_at: expect.any(String) } } });
    t = 4_999;
    readyzStatus = 503;
    expect((await check()).details).toMatchObject({ degraded: false });
    expect(probes).toBe(1);
    t = 5_000;
    expect(await check()).toEqual({ ok: true, details: { degraded: true, graph: expect.objectContaining({ reachable: true, status: 503 }) } });
    expect(probes).toBe(2);
  });

  it('gives up on an upstream that does not answer within the timeout, reporting it degraded but staying ok', async () => {
    // A server that accepts the connection and never answers.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const check = upstreamsCheck(targets({ mcp: `http://127.0.0.1:${(silent.address() as { port: number }).port}` }), { timeoutMs: 50 });
      expect(await check()).toEqual({ ok: true, details: { degraded: true, mcp: { reachable: false, error: 'no answer within 50 ms', checked_at: expect.any(String) } } });
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
