import { DEFAULT_PORTS } from './default-ports';

describe('DEFAULT_PORTS', () => {
  it('gives every listener of every cluster-mode process its own port, so all of them start on one host', () => {
    const ports = Object.values(DEFAULT_PORTS);
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('keeps the numbers the chart and the docs use for the gateway and the graph API', () => {
    expect(DEFAULT_PORTS).toMatchObject({ gateway: 8080, gatewayAdmin: 8081, gatewayOps: 9090, graph: 8083 });
  });
});
