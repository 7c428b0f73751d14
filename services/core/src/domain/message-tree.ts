/** The fields of a chat message that place it in its session's tree. */
export interface TreeNode {
  message_id: string;
  parent_message_id: string | null;
  latest_child_message_id: string | null;
}

/**
 * The messages of the latest branch, root first: from the root follow each message's latest child. A message
 * whose latest child is unset or unknown ends the branch; a cycle (which the writes never make) ends it too, so a
 * damaged row can never loop a request.
 */
export function latestBranch<T extends TreeNode>(messages: readonly T[]): T[] {
  const byId = new Map(messages.map((m) => [m.message_id, m]));
  // The root: the first message without a parent (a session has one, the system or first user message).
  let node = messages.find((m) => m.parent_message_id === null);
  const out: T[] = [];
  const seen = new Set<string>();
  while (node && !seen.has(node.message_id)) {
    seen.add(node.message_id);
    out.push(node);
    node = node.latest_child_message_id === null ? undefined : byId.get(node.latest_child_message_id);
  }
  return out;
}
