import type { BusMessage, Logger } from '@lore/runtime';
import type { z } from 'zod';

/** One Kafka consumer of the graph worker: its topic, its consumer group and what it does with a message. */
export interface GraphConsumer {
  name: string;
  topic: string;
  /** Its consumer group, named from the worker's (`LORE_GRAPH_CONSUMER_GROUP`, default `graph-worker`). */
  groupId(workerGroup: string): string;
  /** Throws to have the bus redeliver the message (infrastructure errors); returns when it is handled. */
  handle(message: BusMessage): Promise<void>;
}

/** The message as its contract schema reads it, or null (logged) when it is malformed: such a message is dropped. */
export function parseMessage<S extends z.ZodType>(logger: Logger, schema: S, message: BusMessage): z.infer<S> | null {
  try {
    return schema.parse(JSON.parse(message.value.toString('utf8')));
  } catch {
    logger.error({ topic: message.topic, offset: message.offset }, 'dropping a malformed message');
    return null;
  }
}
