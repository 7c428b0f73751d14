export { createMcpService, toolResult, MISSING_KEY, type McpService, type McpServiceOptions, type McpLimits } from './mcp-service';
export { mcpConfigSchema, type McpConfig } from './config';
export { defineTool, str, cap, jsonObject, envelopeSchema, seg, type AnyTool, type ToolDefinition, type ToolAccess, type ToolModule, type UpstreamResult } from './tools/define';
export { Upstream, errorMessage, type UpstreamTargets, type Target } from './tools/upstream';
export { TOOL_MODULES, allTools } from './tools/registry';
export { visibleTools } from './tools/access';
export { BoundedEventStore, type EventStoreLimits } from './event-store';
