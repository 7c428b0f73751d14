import { MemoryLifecycleMessageSchema, TOPICS } from '@lore/contracts';
import { eventIdOf, type BusMessage } from '@lore/runtime';
import type { MemoryDeps } from '../application/context';
import { eraseMemory, reopenMemory } from '../application/lifecycle';
import { parseMessage, type GraphConsumer } from './consumer';

/**
 * The gateway's `lore.memory.lifecycle` messages about a memory's life (`memory.deleted` erases it, `memory.created`
 * lifts an erasure); failures are retried by the bus, since every step is idempotent.
 */
export function lifecycleConsumer(memory: MemoryDeps): GraphConsumer {
  const logger = memory.logger;
  return {
    name: 'lifecycle',
    topic: TOPICS.memoryLifecycle,
    groupId: (group) => `${group}-lifecycle`,
    async handle(message: BusMessage): Promise<void> {
      const msg = parseMessage(logger, MemoryLifecycleMessageSchema, message);
      if (!msg) return;
      const eventId = eventIdOf(message) ?? msg.event_id;
      if (msg.type === 'memory.deleted') {
        const result = await eraseMemory(memory, msg, eventId);
        logger.info({ tenant_id: msg.tenant_id, memory_id: msg.memory_id, outcome: result.outcome }, 'memory deletion handled');
      } else {
        const outcome = await reopenMemory(memory, msg, eventId);
        logger.debug({ tenant_id: msg.tenant_id, memory_id: msg.memory_id, outcome }, 'memory creation handled');
      }
    },
  };
}
