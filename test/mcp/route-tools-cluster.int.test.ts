/**
 * The memory-graph, enterprise and memory tools in the cluster's shape: the SDK's client → gateway → tool server →
 * gateway → core (with its connector indexer) and graph (with its worker) on real PostgreSQL, Redis and Kafka.
 */
import { startCoreStack, type CoreStack } from '../core/harness';
import type { TenantFixture } from '../gateway/harness';
import { describeRouteTools } from './route-tools';

jest.setTimeout(180_000);

let s: CoreStack;
let t: TenantFixture;
beforeAll(async () => {
  s = await startCoreStack({ mcp: true, indexer: {} });
  t = await s.tenant();
}, 120_000);
afterAll(async () => {
  await s?.close();
});

describeRouteTools('cluster shape', () => ({
  url: s.gateway.publicUrl,
  key: t.key,
  call: (method, path, body) => s.call(method, path, { authorization: `Bearer ${t.key}` }, body),
}));
