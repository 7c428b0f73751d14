import type { AnyTool } from './define';
import { companySearchTools, peopleSearchTools } from './search';
import { researchTools } from './research';
import { memoryGraphTools } from './memory-graph';
import { enterpriseTools } from './enterprise';
import { memoryTools } from './memory';

/**
 * Every tool module of the server, one line each (docs/mcp.md, "Adding tools"). Tool names are unique across
 * modules; `allTools()` refuses duplicates at start-up.
 */
export const TOOL_MODULES: readonly (readonly AnyTool[])[] = [
  companySearchTools,
  peopleSearchTools,
  researchTools,
  memoryGraphTools,
  enterpriseTools,
  memoryTools,
];

export function allTools(modules: readonly (readonly AnyTool[])[] = TOOL_MODULES): AnyTool[] {
  const seen = new Set<string>();
  const tools = modules.flat();
  for (const t of tools) {
    if (seen.has(t.name)) throw new Error(`duplicate MCP tool name: ${t.name}`);
    seen.add(t.name);
  }
  return tools;
}
