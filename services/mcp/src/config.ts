import { DEFAULT_PORTS, envInt, envSecret } from '@lore/runtime';
import { z } from 'zod';

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

/** An empty value counts as unset (a Kubernetes env entry with `value: ""`), as envInt and LOG_DIR treat it. */
const unsetIfEmpty = (v: unknown) => (v === '' ? undefined : v);

const httpUrl = (name: string) =>
  z.preprocess(unsetIfEmpty, z.string({ error: `${name} is required` }).regex(/^https?:\/\/\S+$/, 'must be an http(s) URL'));

/**
 * The environment of the MCP tool server, parsed once by `main`. The names without `LORE_` are spec 3's own
 * (AGENT_CORE_URL, MEMORY_URL, MCP_HOST, MCP_PORT, LOG_LEVEL, LOG_DIR); the limits and the identity secret are Lore's.
 */
export const mcpConfigSchema = z.object({
  /** Address for search, research and enterprise calls: the gateway (the key is checked there). */
  AGENT_CORE_URL: httpUrl('AGENT_CORE_URL'),
  /** Address for graph and memory calls: the gateway. */
  MEMORY_URL: httpUrl('MEMORY_URL'),
  /** Spec 3's default: loopback only. The chart sets 0.0.0.0 (the gateway reaches the pod through its Service). */
  MCP_HOST: z.preprocess(unsetIfEmpty, z.string().default('127.0.0.1')),
  /** Spec 3's default 8000 (DEFAULT_PORTS.mcp); 0 takes any free port. */
  MCP_PORT: envInt(DEFAULT_PORTS.mcp, 0, 65535),
  LOG_LEVEL: z.preprocess(unsetIfEmpty, z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')),
  /** A folder to write the log to (mcp.log) instead of standard output. */
  LOG_DIR: optionalString,
  /** Verifies the gateway's signed identity, to know the key's scope (docs/mcp.md, "Who sees which tool"). */
  LORE_IDENTITY_SECRET: envSecret(32),
  LORE_MCP_BODY_LIMIT_BYTES: envInt(1024 * 1024, 1024, 16 * 1024 * 1024),
  LORE_MCP_MAX_SESSIONS_PER_KEY: envInt(16, 1, 10_000),
  /** Keep it far below LORE_MCP_MAX_SESSIONS: it is what keeps one tenant from locking the others out. */
  LORE_MCP_MAX_SESSIONS_PER_TENANT: envInt(200, 1, 100_000),
  LORE_MCP_MAX_SESSIONS: envInt(2_000, 1, 100_000),
  LORE_MCP_SESSION_IDLE_MS: envInt(15 * 60_000, 1_000, 24 * 3_600_000),
  LORE_MCP_EVENT_STORE_MAX: envInt(10_000, 10, 1_000_000),
  /** The event store's bounds in bytes (docs/mcp.md, "Sessions"): a count alone let the answers' size fill the heap. */
  LORE_MCP_EVENT_STORE_BYTES: envInt(64 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024),
  LORE_MCP_EVENT_STORE_SESSION_BYTES: envInt(16 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024),
  LORE_MCP_UPSTREAM_TIMEOUT_MS: envInt(30_000, 100, 600_000),
  LORE_MCP_UPSTREAM_MAX_BYTES: envInt(8 * 1024 * 1024, 1024, 64 * 1024 * 1024),
});

export type McpConfig = z.infer<typeof mcpConfigSchema>;
