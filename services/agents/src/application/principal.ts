import { withinReach, type Caller, type MemoryReach } from '@lore/contracts';
import type { Viewer } from '../store/visibility';

export type { Viewer } from '../store/visibility';

/** Who is asking, as the agents application layer needs it: the caller (`callerOf`) and what lists and knowledge read. */
export interface Principal extends Caller {
  /** The identity's role and a signed-in user's groups (what the tenant's knowledge shows them). */
  role?: string;
  groups?: number[];
}

/** The memory a workflow's list read documents from (its starter's), or null when it read none. */
export function knowledgePlace(state: Record<string, unknown>): { workspace_id: string; memory_id: string } | null {
  const starter = state.starter as { workspace_id?: unknown; memory_id?: unknown } | undefined;
  const memory = typeof starter?.memory_id === 'string' ? starter.memory_id : '';
  if (memory === '') return null;
  return { workspace_id: typeof starter?.workspace_id === 'string' ? starter.workspace_id : '', memory_id: memory };
}

function readsPlace(reach: MemoryReach, place: { workspace_id: string; memory_id: string }): boolean {
  return reach.readsDocuments && withinReach(reach, place);
}

/**
 * Whether a viewer sees a workflow and its list (docs/agents.md, "Who sees a workflow"): its owner always; an
 * administrator when the list read no memory, or read one within the administrator's reach. A list built from a
 * memory's documents holds their names and snippets, so it is as absent (404) to a credential beyond that memory as
 * the memory itself.
 */
export function seesWorkflow(viewer: Viewer, w: { owner: string; state: Record<string, unknown> }): boolean {
  if (w.owner === viewer.owner) return true;
  if (!viewer.admin) return false;
  const place = knowledgePlace(w.state);
  return place === null || readsPlace(viewer.reach, place);
}
