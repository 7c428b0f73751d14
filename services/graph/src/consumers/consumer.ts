import { PoisonError, type BusMessage, type Logger } from '@lore/runtime';
import type { z } from 'zod';

/** One Kafka consumer of the graph worker: its topic, its consumer group and what it does with a message. */
export interface GraphConsumer {
  name: string;
  topic: string;
  /** Its consumer group, named from the worker's (`LORE_GRAPH_CONSUMER_GROUP`, default `graph-worker`). */
  groupId(workerGroup: string): string;
  /** Throws to have the bus redeliver the message (infrastructure errors); returns when it is handled. */
  handle(message: BusMessage): Promise<void>;
  /**
   * The message is in `lore.dead` (its handler kept failing, or workers kept stopping on it): mark what it stood for
   * failed, so a user does not wait for it for good. Given the message as it parses (nothing for one that does not).
   */
  deadLettered?(message: BusMessage): Promise<void>;
}

/** The reason a user reads on what a dead-lettered message stood for; the error itself is in the logs and `lore.dead`. */
export const DEAD_LETTER_REASON = 'could not be processed (an internal error; it was set aside for the operators)';

/** The message as its schema reads it, or null: for the dead-letter hook, which has nothing to do with a malformed one. */
export function parsedOrNull<S extends z.ZodType>(schema: S, message: BusMessage): z.infer<S> | null {
  try {
    return schema.parse(JSON.parse(message.value.toString('utf8')));
  } catch {
    return null;
  }
}

/**
 * The message as its contract schema reads it. A malformed one can never be processed: `PoisonError` has the bus
 * dead-letter it at once to `lore.dead`, where an operator sees it (docs/runtime.md, "Poison messages").
 */
export function parseMessage<S extends z.ZodType>(logger: Logger, schema: S, message: BusMessage): z.infer<S> | null {
  try {
    return schema.parse(JSON.parse(message.value.toString('utf8')));
  } catch (err) {
    logger.error({ topic: message.topic, offset: message.offset }, 'malformed message; dead-lettering it');
    throw new PoisonError('malformed message: it does not match its contract schema', { cause: err });
  }
}
