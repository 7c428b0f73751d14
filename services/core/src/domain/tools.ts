/**
 * The tools a persona may allow and a chat message may force (`allowed_tool_ids`, `forced_tool_id`). Integer ids,
 * as spec 2 gives them; the names are what answers report in `tool_calls[].tool_name`.
 */
export const TOOLS = [
  { id: 1, name: 'internal_search', description: 'Search the tenant\'s indexed documents (connectors and files) and cite them.' },
] as const;

export type ToolName = (typeof TOOLS)[number]['name'];

const BY_ID = new Map<number, (typeof TOOLS)[number]>(TOOLS.map((t) => [t.id, t]));

export function toolById(id: number): (typeof TOOLS)[number] | undefined {
  return BY_ID.get(id);
}

/** The ids in `ids` that name no tool. */
export function unknownToolIds(ids: readonly number[]): number[] {
  return ids.filter((id) => !BY_ID.has(id));
}
