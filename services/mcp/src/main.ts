import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  IdentitySigner,
  Lifecycle,
  LISTENER_CLOSE_TIMEOUT_MS,
  createLogger,
  createMetricsRegistry,
  exitOnConfigError,
  fileLogDestination,
  listen,
  opsRouter,
  parseConfig,
  type LogDestination,
} from '@lore/runtime';
import { mcpConfigSchema } from './config';
import { createMcpService } from './mcp-service';

/** The `mcp` deployment: the tool server behind the gateway (docs/mcp.md). No database: every tool calls the API back. */
async function main(): Promise<void> {
  const config = parseConfig(mcpConfigSchema, process.env);
  // LOG_DIR: the log goes to <LOG_DIR>/mcp.log instead of standard output, batched per event-loop turn and written
  // synchronously, like standard output (runtime's fileLogDestination). Its last lines ("shutdown complete" after a
  // SIGTERM) are written by the destination's `exit` handler when the lifecycle exits: no asynchronous write can
  // still be in flight then, which an asynchronous file stream could not promise.
  let destination: LogDestination | undefined;
  if (config.LOG_DIR) {
    mkdirSync(config.LOG_DIR, { recursive: true });
    destination = fileLogDestination(join(config.LOG_DIR, 'mcp.log'));
  }
  const logger = createLogger({ level: config.LOG_LEVEL, service: 'mcp', ...(destination ? { destination } : {}) });
  const metrics = createMetricsRegistry('mcp');
  const lifecycle = new Lifecycle(logger);
  lifecycle.installSignalHandlers();
  const mcp = createMcpService({
    targets: { agentCore: config.AGENT_CORE_URL, memory: config.MEMORY_URL },
    signer: new IdentitySigner(config.LORE_IDENTITY_SECRET),
    logger,
    limits: {
      bodyLimitBytes: config.LORE_MCP_BODY_LIMIT_BYTES,
      maxSessionsPerKey: config.LORE_MCP_MAX_SESSIONS_PER_KEY,
      maxSessionsPerTenant: config.LORE_MCP_MAX_SESSIONS_PER_TENANT,
      maxSessions: config.LORE_MCP_MAX_SESSIONS,
      sessionIdleMs: config.LORE_MCP_SESSION_IDLE_MS,
      eventStoreMax: config.LORE_MCP_EVENT_STORE_MAX,
      eventStoreBytes: config.LORE_MCP_EVENT_STORE_BYTES,
      eventStoreSessionBytes: config.LORE_MCP_EVENT_STORE_SESSION_BYTES,
      upstreamTimeoutMs: config.LORE_MCP_UPSTREAM_TIMEOUT_MS,
      upstreamMaxBytes: config.LORE_MCP_UPSTREAM_MAX_BYTES,
    },
  });
  // /livez, /readyz and /metrics beside /health and /mcp, as every Lore service's port serves them.
  mcp.app.use(opsRouter(lifecycle, metrics).routes());
  const server = await listen(mcp.app, config.MCP_PORT, config.MCP_HOST);
  lifecycle.onShutdown('http server', () => server.close(), LISTENER_CLOSE_TIMEOUT_MS);
  lifecycle.onShutdown('mcp sessions', () => mcp.close());
  lifecycle.markStarted();
  logger.info({ url: server.url }, 'mcp listening');
}

main().catch(exitOnConfigError);
