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

/** One pushed document, as the batch's plan needs it. */
export interface BatchItem {
  /** The source's id. */
  id: string;
  contentHash: string;
  /** False for an empty or blank text (`hasText`): the document is skipped. */
  hasText: boolean;
}

/** What the push does with one document, in input order. */
export type BatchStep =
  | { outcome: 'skipped'; docId: string | null }
  | { outcome: 'unchanged'; docId: string }
  /** Accepted as a new document `docId` (`updated`: it replaces a copy). */
  | { outcome: 'created' | 'updated'; docId: string };

/** A whole batch's plan: the step of each document and the writes that carry them out together. */
export interface BatchPlan {
  steps: BatchStep[];
  /** Indexes of the accepted documents (created or updated), in input order. */
  accepted: number[];
  /**
   * Indexes of the accepted documents whose row is stored: all but those replaced again by a later document of the
   * same batch (their row would be inserted and deleted in the same transaction), in input order.
   */
  stored: number[];
  /** The memory's copies that go, replaced. */
  deleted: string[];
  /** The memory's copies that stay, whose access becomes the batch's. */
  accessChanged: string[];
}

/**
 * Plans a batch document by document in input order, exactly as pushing them one after another would go: each is
 * decided (`planUpsert`) against the copy the memory would hold by then — its copy in `copies`, or the one an
 * earlier document of the batch accepted. So the same id twice with the same hash is `created` (or `updated`) then
 * `unchanged`, with another hash `created` then `updated`; a skipped document answers the copy held by then.
 * `newDocId` names each accepted document.
 */
export function planBatch(items: BatchItem[], copies: ReadonlyMap<string, CurrentCopy>, access: ConnectorAccess, newDocId: () => string): BatchPlan {
  const groups = normalizeGroups(access.groups);
  /** The copy each id has by now; `index` when an earlier document of the batch accepted it. */
  const held = new Map<string, CurrentCopy & { index?: number }>(copies);
  const steps: BatchStep[] = [];
  const accepted: number[] = [];
  const stored = new Set<number>();
  const deleted: string[] = [];
  const accessChanged = new Set<string>();
  items.forEach((item, i) => {
    const current = held.get(item.id) ?? null;
    if (!item.hasText) {
      steps.push({ outcome: 'skipped', docId: current?.doc_id ?? null });
      return;
    }
    const plan = planUpsert(current, item.contentHash, access);
    if (plan.kind === 'unchanged') {
      // Only a copy the memory held can differ: one this batch accepted has the batch's access.
      if (plan.access) {
        accessChanged.add(plan.docId);
        held.set(item.id, { ...current!, access_public: plan.access.public, access_groups: plan.access.groups });
      }
      steps.push({ outcome: 'unchanged', docId: plan.docId });
      return;
    }
    if (plan.kind === 'replace') {
      if (current?.index !== undefined) stored.delete(current.index);
      else {
        deleted.push(plan.docId);
        accessChanged.delete(plan.docId);
      }
    }
    const docId = newDocId();
    held.set(item.id, { doc_id: docId, connector_hash: item.contentHash, access_public: access.public, access_groups: groups, index: i });
    steps.push({ outcome: plan.kind === 'replace' ? 'updated' : 'created', docId });
    accepted.push(i);
    stored.add(i);
  });
  return { steps, accepted, stored: [...stored].sort((a, b) => a - b), deleted, accessChanged: [...accessChanged] };
}

/** True when carrying out `plan` writes nothing: every document unchanged with the same access, or skipped. */
export function writesNothing(plan: BatchPlan): boolean {
  return plan.accepted.length === 0 && plan.deleted.length === 0 && plan.accessChanged.length === 0;
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
