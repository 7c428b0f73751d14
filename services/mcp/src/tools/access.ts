import type { KeyScopes } from '@lore/contracts';
import type { AnyTool } from './define';

/**
 * Which tools a key sees (docs/mcp.md, "Who sees which tool"), from the key scope the gateway signed into the
 * request's identity: a read-only key sees no write tool, a write-only key no read tool, and a key whose `modules`
 * list is not empty sees only the tools of those modules. The list is a courtesy: every call still goes through the
 * gateway with the caller's key, which refuses what the key may not do.
 */
export function visibleTools(tools: readonly AnyTool[], scopes: KeyScopes | undefined): AnyTool[] {
  const modules = scopes?.modules ?? [];
  const access = scopes?.access ?? 'read_write';
  return tools.filter((t) => {
    if (modules.length > 0 && !(modules as readonly string[]).includes(t.module)) return false;
    if (access === 'read' && t.access !== 'read') return false;
    if (access === 'write' && t.access !== 'write') return false;
    return true;
  });
}
