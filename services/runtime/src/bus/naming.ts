import { NEW_GROUP_START } from '@lore/contracts';
import { z } from 'zod';

/** `LORE_KAFKA_PREFIX`: letters, digits, `.`, `_`, `-`, at most 64, starting and ending with a letter or digit. */
export const KAFKA_PREFIX_PATTERN = /^([A-Za-z0-9]([A-Za-z0-9._-]{0,62}[A-Za-z0-9])?)?$/;

/**
 * The zod field of `LORE_KAFKA_PREFIX` for every process with a Kafka bus. Empty (the default) keeps today's names;
 * `acme` makes `lore.events` the topic `acme.lore.events` and the group `graph-worker` the group `acme.graph-worker`.
 */
export const envKafkaPrefix = () =>
  z
    .string()
    .regex(KAFKA_PREFIX_PATTERN, 'must be letters, digits, ".", "_" or "-" (at most 64, starting and ending with a letter or digit)')
    .default('');

/**
 * The install's names on a shared broker: every topic and consumer group the bus touches gets `<prefix>.` in front,
 * and callers only ever see logical names (`lore.events`), so no caller can forget the prefix.
 */
export class BrokerNames {
  private readonly head: string;

  constructor(prefix = '') {
    if (!KAFKA_PREFIX_PATTERN.test(prefix)) throw new Error(`invalid Kafka prefix ${JSON.stringify(prefix)}`);
    this.head = prefix ? `${prefix}.` : '';
  }

  topic(logical: string): string {
    return this.head + logical;
  }

  group(logical: string): string {
    return this.head + logical;
  }

  /** The logical name of one of this install's topics. */
  logicalTopic(physical: string): string {
    return physical.startsWith(this.head) ? physical.slice(this.head.length) : physical;
  }
}

/**
 * Whether a group that never committed starts at the first retained message of `topic`: the caller's choice if it
 * made one, else the topic's policy in contracts (`NEW_GROUP_START`), else `latest`.
 */
export function startsAtBeginning(topic: string, fromBeginning: boolean | undefined): boolean {
  if (fromBeginning !== undefined) return fromBeginning;
  return (NEW_GROUP_START as Record<string, 'earliest' | 'latest' | undefined>)[topic] === 'earliest';
}
