/**
 * The default port of every listener of every cluster-mode process, in one table so that a platform engineer can
 * run all of them on one host without setting a single port, and so a unit test can hold them distinct. Each
 * process's config schema takes its defaults from here; the chart sets the same numbers explicitly
 * (docs/configuration.md, "Processes at a glance").
 *
 * Embedded mode is not in the table: it replaces all of these processes with one, so it never runs beside them
 * except for a developer's gateway, and its admin port (9081) already avoids the gateway's 8081.
 */
export const DEFAULT_PORTS = {
  /** `GATEWAY_PORT`: the public API. */
  gateway: 8080,
  /** `GATEWAY_ADMIN_PORT`: the internal admin API. */
  gatewayAdmin: 8081,
  /** `GATEWAY_OPS_PORT`: the gateway's probes and metrics. */
  gatewayOps: 9090,
  /** `WEBHOOKS_OPS_PORT`: the webhooks worker's probes and metrics. */
  webhooksOps: 9091,
  /** `LORE_GRAPH_PORT`: the graph API (its probes and metrics share the port). */
  graph: 8083,
  /** `LORE_GRAPH_WORKER_PORT`: the graph worker's probes and metrics. */
  graphWorker: 8086,
  /** `LORE_OPERATOR_HEALTH_PORT`: the operator's probes and metrics. */
  operatorHealth: 8087,
  /** `LORE_CORE_PORT`: the core API (its probes and metrics share the port). */
  core: 8082,
  /** `LORE_CORE_WORKER_PORT`: the core worker's (connector indexer's) probes and metrics. */
  coreWorker: 8088,
  /** `LORE_AGENTS_PORT`: the agents API (its probes and metrics share the port). */
  agents: 8084,
  /** `LORE_AGENTS_WORKER_PORT`: the agents worker's probes and metrics. */
  agentsWorker: 8089,
  /** `MCP_PORT`: the MCP tool server (spec 3's default; its probes and metrics share the port). */
  mcp: 8000,
} as const;
