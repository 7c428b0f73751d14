/**
 * The rules of a connector's push (docs/memory.md, "Connector documents (graph-internal)"): what happens to one
 * pushed document given the memory's current copy, with no HTTP and no SQL.
 */

/** Who may see a connector's document: everyone in the tenant, or (later) the listed groups and administrators. */
export interface ConnectorAccess {
  public: boolean;
  groups: number[];
}

/** The memory's copy of a document, as far as the decision needs it. */
export interface CurrentCopy {
  doc_id: string;
  connector_hash: string | null;
  access_public: boolean;
  access_groups: number[];
}

export type UpsertPlan =
  /** No copy yet: accept the document. */
  | { kind: 'create' }
  /** The content changed: the old copy goes and the new one is accepted, in one transaction. */
  | { kind: 'replace'; docId: string }
  /** The same content: nothing is re-indexed; `access` is set when only who may see it changed. */
  | { kind: 'unchanged'; docId: string; access: ConnectorAccess | null };

/** Groups as stored: each once, in ascending order, so two lists of the same groups compare equal. */
export function normalizeGroups(groups: number[]): number[] {
  return [...new Set(groups)].sort((a, b) => a - b);
}

export function sameAccess(current: CurrentCopy, access: ConnectorAccess): boolean {
  const a = normalizeGroups(current.access_groups);
  const b = normalizeGroups(access.groups);
  return current.access_public === access.public && a.length === b.length && a.every((g, i) => g === b[i]);
}

/** Decides what a push of a document with `contentHash` and `access` does to the memory's `current` copy. */
export function planUpsert(current: CurrentCopy | null, contentHash: string, access: ConnectorAccess): UpsertPlan {
  if (!current) return { kind: 'create' };
  if (current.connector_hash !== contentHash) return { kind: 'replace', docId: current.doc_id };
  return { kind: 'unchanged', docId: current.doc_id, access: sameAccess(current, access) ? null : { public: access.public, groups: normalizeGroups(access.groups) } };
}

/** A text with nothing to index (empty or only white space) is skipped, not refused with the whole batch. */
export function hasText(text: string): boolean {
  return text.trim().length > 0;
}

/** `items` in consecutive slices of at most `size` (the last may be shorter). */
export function slices<T>(items: T[], size: number): T[][] {
  if (!Number.isInteger(size) || size < 1) throw new RangeError('size must be a positive integer');
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
