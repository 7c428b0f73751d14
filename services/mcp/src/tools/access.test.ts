import { z } from 'zod';
import { visibleTools } from './access';
import { defineTool } from './define';

const tool = (name: string, access: 'read' | 'write', module: 'agents' | 'graph') =>
  defineTool({ name, description: name, input: z.object({}), access, module, call: async () => ({ success: true, data: null }) });
const tools = [tool('a_read', 'read', 'agents'), tool('a_write', 'write', 'agents'), tool('g_read', 'read', 'graph'), tool('g_write', 'write', 'graph')];
const names = (scopes: Parameters<typeof visibleTools>[1]) => visibleTools(tools, scopes).map((t) => t.name);

describe('visibleTools', () => {
  it('shows every tool to an unrestricted key', () => {
    expect(names(undefined)).toEqual(['a_read', 'a_write', 'g_read', 'g_write']);
    expect(names({ modules: [], access: 'read_write' })).toEqual(['a_read', 'a_write', 'g_read', 'g_write']);
  });
  it('hides write tools from a read-only key and read tools from a write-only key', () => {
    expect(names({ access: 'read' })).toEqual(['a_read', 'g_read']);
    expect(names({ access: 'write' })).toEqual(['a_write', 'g_write']);
  });
  it('shows a module-scoped key only its modules\' tools', () => {
    expect(names({ modules: ['mcp', 'graph'] })).toEqual(['g_read', 'g_write']);
    expect(names({ modules: ['mcp'] })).toEqual([]);
    expect(names({ modules: ['mcp', 'agents'], access: 'read' })).toEqual(['a_read']);
  });
  it('annotates from access, and refuses a destructive read tool', () => {
    expect(tools[0]!.annotations).toMatchObject({ readOnlyHint: true });
    expect(tools[1]!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    expect(() => defineTool({ name: 'x', description: 'x', input: z.object({}), access: 'read', module: 'agents', annotations: { destructiveHint: true }, call: async () => ({ success: true, data: null }) })).toThrow(/destructive/);
  });
});
