import { randomBytes } from 'node:crypto';
import { requireEnv } from '../support/infra';
import { distinctFreePorts } from './processes';

/**
 * Cluster mode's processes as the suites and benchmarks start them: each compiled entry point on its own, with exactly
 * the variables configuration.md lists for it (one table per process, nothing inherited), on the test
 * infrastructure's PostgreSQL, Redis and Kafka. Shared by test/e2e/cluster-install, test/e2e/faults,
 * test/runtime/trace-e2e and bench/soak.
 */

export type ClusterProcess = 'graph' | 'graph-worker' | 'core' | 'core-worker' | 'agents' | 'agents-worker' | 'mcp' | 'webhooks' | 'gateway';

/** Each process's compiled entry point, relative to the checkout. */
export const CLUSTER_ENTRY: Record<ClusterProcess, string> = {
  graph: 'services/graph/dist/main.js',
  'graph-worker': 'services/graph/dist/worker-main.js',
  core: 'services/core/dist/main.js',
  'core-worker': 'services/core/dist/worker-main.js',
  agents: 'services/agents/dist/main.js',
  'agents-worker': 'services/agents/dist/worker-main.js',
  mcp: 'services/mcp/dist/main.js',
  webhooks: 'services/gateway/dist/webhooks-main.js',
  gateway: 'services/gateway/dist/main.js',
};

/** Per-run secrets, as configuration.md's "Secrets" says to make them. */
export interface ClusterSecrets {
  identity: string;
  session: string;
  adminToken: string;
  encryptionKeys: string;
}

export function clusterSecrets(): ClusterSecrets {
  const secret = (bytes: number) => randomBytes(bytes).toString('base64url');
  return { identity: secret(36), session: secret(36), adminToken: secret(30), encryptionKeys: `k1:${randomBytes(32).toString('base64')}` };
}

/** One port per listener: each process's own (its API or its probes), plus the gateway's public and admin ports. */
export type ClusterPorts = Record<ClusterProcess | 'gatewayPublic' | 'gatewayAdmin', number>;

export async function clusterPorts(): Promise<ClusterPorts> {
  const names: Array<keyof ClusterPorts> = [...(Object.keys(CLUSTER_ENTRY) as ClusterProcess[]), 'gatewayPublic', 'gatewayAdmin'];
  const ports = await distinctFreePorts(names.length);
  return Object.fromEntries(names.map((n, i) => [n, ports[i]!])) as ClusterPorts;
}

/** Where each process answers its probes (/readyz) and metrics: the API port, or the worker's and gateway's ops port. */
export function opsUrl(ports: ClusterPorts, name: ClusterProcess): string {
  return `http://127.0.0.1:${ports[name]}`;
}

export interface ClusterOptions {
  /** The application role's URL (never the owner's). */
  databaseUrl: string;
  secrets: ClusterSecrets;
  /** configuration.md's LORE_KAFKA_PREFIX and GATEWAY_REDIS_PREFIX: keep this install apart on the shared servers. */
  kafkaPrefix: string;
  redisPrefix: string;
  ports: ClusterPorts;
  /** The processes to start; the gateway forwards only to the upstreams among them. */
  processes: ClusterProcess[];
}

/**
 * configuration.md's variables of each chosen process. Loopback webhook receivers and connector sites are allowed
 * (the tests' receivers and sites are on loopback); graph embeds with the hashed embedder (no model to load).
 */
export function clusterEnv(o: ClusterOptions): Partial<Record<ClusterProcess, Record<string, string>>> {
  const kafka = requireEnv('LORE_TEST_KAFKA_BROKERS');
  const redis = requireEnv('LORE_TEST_REDIS_URL');
  const has = (p: ClusterProcess) => o.processes.includes(p);
  const url = (p: ClusterProcess) => opsUrl(o.ports, p);
  const bus = { LORE_KAFKA_BROKERS: kafka, LORE_KAFKA_PREFIX: o.kafkaPrefix };
  const graph = { LORE_DATABASE_URL: o.databaseUrl, ...bus, LORE_IDENTITY_SECRET: o.secrets.identity, LORE_GRAPH_HOST: '127.0.0.1', LORE_EMBEDDER: 'hashed' };
  // Core: PostgreSQL, the identity secret, the key ring and the graph API chat retrieves from; its worker adds Kafka.
  const core = {
    LORE_DATABASE_URL: o.databaseUrl,
    LORE_IDENTITY_SECRET: o.secrets.identity,
    LORE_ENCRYPTION_KEYS: o.secrets.encryptionKeys,
    LORE_CORE_GRAPH_URL: url('graph'),
    LORE_CORE_HOST: '127.0.0.1',
    LORE_CORE_MIGRATE: 'false',
    LORE_CONNECTORS_ALLOW_LOOPBACK: 'true',
  };
  // Agents: PostgreSQL, Redis (the workflows' progress streams) and the identity secret; its worker adds Kafka and the
  // graph API the tenant's knowledge is read from.
  const agents = { LORE_DATABASE_URL: o.databaseUrl, LORE_REDIS_URL: redis, LORE_IDENTITY_SECRET: o.secrets.identity, LORE_AGENTS_HOST: '127.0.0.1', LORE_AGENTS_MIGRATE: 'false' };
  const all: Record<ClusterProcess, Record<string, string>> = {
    graph: { ...graph, LORE_GRAPH_PORT: String(o.ports.graph) },
    'graph-worker': { ...graph, LORE_GRAPH_WORKER_PORT: String(o.ports['graph-worker']) },
    core: { ...core, LORE_CORE_PORT: String(o.ports.core) },
    'core-worker': { ...core, ...bus, LORE_CORE_WORKER_PORT: String(o.ports['core-worker']) },
    agents: { ...agents, LORE_AGENTS_PORT: String(o.ports.agents) },
    'agents-worker': { ...agents, ...bus, LORE_AGENTS_WORKER_PORT: String(o.ports['agents-worker']), LORE_AGENTS_GRAPH_URL: url('graph') },
    // The tool server calls the API back through the gateway with the caller's key.
    mcp: {
      MCP_HOST: '127.0.0.1',
      MCP_PORT: String(o.ports.mcp),
      AGENT_CORE_URL: `http://127.0.0.1:${o.ports.gatewayPublic}`,
      MEMORY_URL: `http://127.0.0.1:${o.ports.gatewayPublic}`,
      LORE_IDENTITY_SECRET: o.secrets.identity,
    },
    webhooks: {
      LORE_DATABASE_URL: o.databaseUrl,
      ...bus,
      LORE_ENCRYPTION_KEYS: o.secrets.encryptionKeys,
      WEBHOOKS_OPS_HOST: '127.0.0.1',
      WEBHOOKS_OPS_PORT: String(o.ports.webhooks),
      LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true',
    },
    gateway: {
      LORE_DATABASE_URL: o.databaseUrl,
      LORE_REDIS_URL: redis,
      GATEWAY_REDIS_PREFIX: o.redisPrefix,
      LORE_IDENTITY_SECRET: o.secrets.identity,
      GATEWAY_SESSION_SECRET: o.secrets.session,
      GATEWAY_ADMIN_TOKEN: o.secrets.adminToken,
      LORE_ENCRYPTION_KEYS: o.secrets.encryptionKeys,
      GATEWAY_RUN_MIGRATIONS: 'false',
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: String(o.ports.gatewayPublic),
      GATEWAY_ADMIN_HOST: '127.0.0.1',
      GATEWAY_ADMIN_PORT: String(o.ports.gatewayAdmin),
      GATEWAY_OPS_PORT: String(o.ports.gateway),
      ...(has('graph') ? { GATEWAY_UPSTREAM_GRAPH: url('graph') } : {}),
      ...(has('core') ? { GATEWAY_UPSTREAM_CORE: url('core') } : {}),
      ...(has('agents') ? { GATEWAY_UPSTREAM_AGENTS: url('agents') } : {}),
      ...(has('mcp') ? { GATEWAY_UPSTREAM_MCP: url('mcp') } : {}),
      LORE_WEBHOOKS_ALLOW_LOOPBACK: 'true',
    },
  };
  return Object.fromEntries(o.processes.map((p) => [p, all[p]]));
}
