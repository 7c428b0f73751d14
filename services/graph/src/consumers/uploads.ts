import { MemoryUploadMessageSchema, TOPICS } from '@lore/contracts';
import { eventIdOf, type BusMessage } from '@lore/runtime';
import type { MemoryDeps } from '../application/context';
import { failDeadLetteredUpload, processUpload } from '../application/uploads';
import { DEAD_LETTER_REASON, parseMessage, parsedOrNull, type GraphConsumer } from './consumer';

/**
 * `lore.memory.uploads`: extracts an uploaded file and ingests its text. A file that cannot be read fails its upload
 * (with a reason) and is never retried; only infrastructure errors reach the bus for redelivery (docs/memory.md).
 */
export function uploadConsumer(memory: MemoryDeps): GraphConsumer {
  const logger = memory.logger;
  return {
    name: 'uploads',
    topic: TOPICS.memoryUploads,
    groupId: (group) => `${group}-uploads`,
    async handle(message: BusMessage): Promise<void> {
      const msg = parseMessage(logger, MemoryUploadMessageSchema, message);
      if (!msg) return;
      const eventId = eventIdOf(message) ?? msg.event_id;
      const outcome = await processUpload(memory, msg, eventId);
      logger.info({ upload_id: msg.upload_id, outcome }, 'upload handled');
    },
    async deadLettered(message: BusMessage): Promise<void> {
      const msg = parsedOrNull(MemoryUploadMessageSchema, message);
      if (!msg) return;
      await failDeadLetteredUpload(memory, msg, eventIdOf(message) ?? msg.event_id, `the file ${DEAD_LETTER_REASON}`);
      logger.warn({ upload_id: msg.upload_id }, 'a dead-lettered upload was marked failed');
    },
  };
}
