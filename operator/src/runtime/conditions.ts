import type { Condition, ConditionStatus } from '../kube/types';

/** The condition types every Lore kind reports, following the kstatus / Flux conventions. */
export const READY = 'Ready';
/** Present (True) only while the operator is still working towards the spec; removed when done. */
export const RECONCILING = 'Reconciling';
/** Present (True) only when progress needs a change of the spec or of something outside the operator. */
export const STALLED = 'Stalled';

export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

/**
 * Returns `conditions` with `input` set. The transition time moves only when the status really changes; reason,
 * message and observedGeneration are refreshed in place. Order of the other conditions is kept so that an
 * unchanged status compares equal and is not rewritten.
 */
export function setCondition(conditions: Condition[] | undefined, input: ConditionInput, generation: number | undefined, now: Date): Condition[] {
  const list = conditions ? [...conditions] : [];
  const i = list.findIndex((c) => c.type === input.type);
  const existing = i >= 0 ? list[i] : undefined;
  const next: Condition = {
    type: input.type,
    status: input.status,
    observedGeneration: generation,
    lastTransitionTime: existing && existing.status === input.status ? existing.lastTransitionTime : rfc3339(now),
    reason: input.reason,
    message: truncate(input.message, 32_000),
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

export function removeCondition(conditions: Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

export function findCondition(conditions: Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isConditionTrue(conditions: Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/** The summary a reconcile ends in: ready, still progressing, or stalled until something changes. */
export type Summary =
  | { state: 'ready'; reason: string; message: string }
  | { state: 'progressing'; reason: string; message: string }
  | { state: 'stalled'; reason: string; message: string };

/** Sets Ready / Reconciling / Stalled consistently from one summary. */
export function summarize(conditions: Condition[] | undefined, summary: Summary, generation: number | undefined, now: Date): Condition[] {
  let list = conditions ?? [];
  const { reason, message } = summary;
  switch (summary.state) {
    case 'ready':
      list = setCondition(list, { type: READY, status: 'True', reason, message }, generation, now);
      list = removeCondition(list, RECONCILING);
      list = removeCondition(list, STALLED);
      break;
    case 'progressing':
      list = setCondition(list, { type: READY, status: 'False', reason, message }, generation, now);
      list = setCondition(list, { type: RECONCILING, status: 'True', reason, message }, generation, now);
      list = removeCondition(list, STALLED);
      break;
    case 'stalled':
      list = setCondition(list, { type: READY, status: 'False', reason, message }, generation, now);
      list = setCondition(list, { type: STALLED, status: 'True', reason, message }, generation, now);
      list = removeCondition(list, RECONCILING);
      break;
  }
  return list;
}

/** RFC 3339 to the second, as metav1.Time serialises. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function truncate(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}
