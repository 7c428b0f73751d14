import { TOPICS } from '@lore/contracts';
import type { BrowsableBus, EventBus } from '../ports/event-bus';
import { EVENT_ID_HEADER } from './event-id';
import { readDeadLetter, redriveOf, type DeadLetter } from './poison';

/** How much of a dead letter's value the listing shows. */
const SHOWN_VALUE_CHARS = 4_096;

/** One dead letter as the operator's listing prints it (one JSON object per line). */
export interface DeadLetterView extends Omit<DeadLetter, 'firstFailureAt' | 'lastFailureAt' | 'value'> {
  first_failure_at: string;
  last_failure_at: string;
  event_id: string | null;
  headers: Record<string, string>;
  value_bytes: number;
  /** The value as UTF-8, cut at 4 096 characters. */
  value: string;
}

export function viewOf(d: DeadLetter): DeadLetterView {
  const text = d.value.toString('utf8');
  return {
    id: d.id,
    topic: d.topic,
    partition: d.partition,
    offset: d.offset,
    key: d.key,
    group: d.group,
    error: d.error,
    attempts: d.attempts,
    first_failure_at: d.firstFailureAt,
    last_failure_at: d.lastFailureAt,
    event_id: d.headers[EVENT_ID_HEADER] ?? null,
    headers: d.headers,
    value_bytes: d.value.length,
    value: text.length > SHOWN_VALUE_CHARS ? `${text.slice(0, SHOWN_VALUE_CHARS)}…` : text,
  };
}

/** The dead letters `lore.dead` retains (oldest first per partition), optionally of one original topic or group. */
export async function listDeadLetters(bus: BrowsableBus, filter: { topic?: string; group?: string; limit?: number } = {}): Promise<DeadLetter[]> {
  const all = await bus.browse(TOPICS.dead, { limit: filter.limit ?? 1_000 });
  return all
    .map(readDeadLetter)
    .filter((d): d is DeadLetter => d !== null && (!filter.topic || d.topic === filter.topic) && (!filter.group || d.group === filter.group));
}

/**
 * Publishes the dead letters with these ids (`partition:offset` in `lore.dead`) back to their original topics.
 * Refuses the whole request, publishing nothing, if an id is not in the topic.
 */
export async function redriveDeadLetters(bus: EventBus & BrowsableBus, ids: string[], limit = 100_000): Promise<DeadLetter[]> {
  const byId = new Map((await listDeadLetters(bus, { limit })).map((d) => [d.id, d]));
  const missing = ids.filter((id) => !byId.has(id));
  if (missing.length > 0) throw new Error(`no dead letter with id ${missing.join(', ')} in ${TOPICS.dead}`);
  const chosen = [...new Set(ids)].map((id) => byId.get(id)!);
  for (const d of chosen) {
    const { topic, message } = redriveOf(d);
    await bus.publish(topic, [message]);
  }
  return chosen;
}
