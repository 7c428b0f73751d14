import type { Caller } from '@lore/contracts';

/** Who looks at workflows and lists: the owner string, whether an administrator, and the credential's reach. */
export type Viewer = Pick<Caller, 'owner' | 'admin' | 'reach'>;

/**
 * `seesWorkflow` (application/principal.ts) as a SQL condition: `owner` and `state` are the expressions of the row's
 * owner and its workflow's state (NULL for a list without a workflow, which read no memory); the values are appended
 * to `params`.
 */
export function seesWorkflowSql(cols: { owner: string; state: string }, viewer: Viewer, params: unknown[]): string {
  const bind = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  const own = `${cols.owner} = ${bind(viewer.owner)}::text`;
  if (!viewer.admin) return own;
  const memory = `coalesce(${cols.state}->'starter'->>'memory_id', '')`;
  const open = [`${memory} = ''`];
  const { reach } = viewer;
  if (reach.readsDocuments) {
    const within = ['true'];
    if (reach.workspaceId !== null) within.push(`coalesce(${cols.state}->'starter'->>'workspace_id', '') = ${bind(reach.workspaceId)}::text`);
    if (reach.memoryIds !== null) within.push(`${memory} = ANY(${bind([...reach.memoryIds])}::text[])`);
    open.push(`(${within.join(' AND ')})`);
  }
  return `(${own} OR ${open.join(' OR ')})`;
}
