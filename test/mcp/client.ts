import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { IDENTITY_HEADER, IdentitySigner, createLogger, listen } from '@lore/runtime';
import { createMcpService } from '@lore/mcp';

/** Tool names of issue 16's three areas (spec 3's tool table). */
export const COMPANY_TOOLS = ['start_workflow', 'continue_workflow', 'get_status_workflows', 'stop', 'start_enrichment', 'stop_enrichment', 'get_lists', 'get_search_results', 'company_database_search'];
export const PEOPLE_TOOLS = ['start_people_search', 'continue_people_search', 'get_status_people_search', 'stop_people_search', 'people_database_search'];
export const RESEARCH_TOOLS = ['get_active_workflow', 'start_research', 'get_result_of_search'];
export const SEARCH_TOOLS = [...COMPANY_TOOLS, ...PEOPLE_TOOLS, ...RESEARCH_TOOLS];
export const READ_TOOLS = ['get_status_workflows', 'get_lists', 'get_search_results', 'company_database_search', 'get_status_people_search', 'people_database_search', 'get_active_workflow', 'get_result_of_search'];

export interface McpClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Calls a tool; answers its parsed JSON text, after checking that structuredContent is the same object. */
  call(name: string, args?: Record<string, unknown>): Promise<{ success: boolean; data?: any; error?: string }>;
  close(): Promise<void>;
}

/**
 * The SDK's own client over Streamable HTTP, with `x-api-key` on every request; `extraHeaders` adds headers made
 * afresh for each request (a signed identity, for a tool server reached without the gateway); `path` may name a place
 * (`/mcp?memory_id=…`).
 */
export async function connectMcp(baseUrl: string, apiKey: string, extraHeaders?: () => Promise<Record<string, string>>, path = '/mcp'): Promise<McpClient> {
  const withHeaders: typeof fetch | undefined = extraHeaders
    ? async (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), ...(await extraHeaders()) } })
    : undefined;
  const transport = new StreamableHTTPClientTransport(new URL(path, baseUrl), { requestInit: { headers: { 'x-api-key': apiKey } }, ...(withHeaders ? { fetch: withHeaders } : {}) });
  const client = new Client({ name: 'lore-test', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    transport,
    async call(name, args = {}) {
      const res = (await client.callTool({ name, arguments: args })) as { content: { type: string; text: string }[]; structuredContent?: unknown; isError?: boolean };
      expect(res.content).toHaveLength(1);
      expect(res.content[0]!.type).toBe('text');
      const parsed = JSON.parse(res.content[0]!.text);
      expect(res.structuredContent).toEqual(parsed);
      expect(Boolean(res.isError)).toBe(!parsed.success);
      if (!parsed.success) {
        expect(typeof parsed.error).toBe('string');
        // No stack trace ever reaches a client.
        expect(parsed.error).not.toMatch(/\n\s+at |\.ts:\d+|node_modules/);
      }
      return parsed;
    },
    async close() {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    },
  };
}

/** A raw initialize request, for answers the SDK client hides (401, 429). */
export async function rawInitialize(baseUrl: string, headers: Record<string, string>): Promise<{ status: number; json: any; sessionId: string | null; retryAfter: string | null }> {
  const res = await fetch(new URL('/mcp', baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    const data = /^data: (.*)$/m.exec(text);
    json = data ? JSON.parse(data[1]!) : text;
  }
  return { status: res.status, json, sessionId: res.headers.get('mcp-session-id'), retryAfter: res.headers.get('retry-after') };
}

/** A tool server whose upstreams fail: its API address is a closed port. */
export interface DeadUpstreamMcp {
  url: string;
  /** The SDK's client with `key`, each request carrying a freshly signed identity (as the gateway forwards it). */
  connect(key: string): Promise<McpClient>;
  close(): Promise<void>;
}

/**
 * The tool server as a deployment runs it (createMcpService on its own listener), with AGENT_CORE_URL and MEMORY_URL
 * pointing at a port that was just closed: every tool call's upstream is refused. Reached over HTTP as the gateway
 * reaches it (the key kept, a signed identity of this server's own secret), so the SDK's client meets the same
 * server, sessions and answers as through the gateway.
 */
export async function startDeadUpstreamMcp(): Promise<DeadUpstreamMcp> {
  const closed = await listen((_req: unknown, res: { end(): void }) => res.end(), 0, '127.0.0.1');
  const deadUrl = closed.url;
  await closed.close();
  const signer = new IdentitySigner(randomBytes(32).toString('hex'));
  const service = createMcpService({ targets: { agentCore: deadUrl, memory: deadUrl }, signer, logger: createLogger({ level: 'silent', service: 'mcp-dead-upstream' }), limits: { upstreamTimeoutMs: 5_000 } });
  const server = await listen(service.app, 0, '127.0.0.1');
  const identity = () => signer.sign({ tenant_id: 't-dead-upstream', workspace_id: 'w', memory_id: 'm', credential: 'ck_live', subject: 'k', role: 'tenant_admin' });
  return {
    url: server.url,
    connect: (key) => connectMcp(server.url, key, async () => ({ [IDENTITY_HEADER]: await identity() })),
    close: async () => {
      await service.close();
      await server.close();
    },
  };
}
