import { MemoryIngestMessageSchema, TOPICS } from '@lore/contracts';
import { eventIdOf, inSpan, type BusMessage } from '@lore/runtime';
import type { MemoryDeps } from '../application/context';
import { failDocument, indexDocument } from '../application/indexer';
import { DEAD_LETTER_REASON, parseMessage, parsedOrNull, type GraphConsumer } from './consumer';

/**
 * `lore.memory.ingest` (keyed by memory id, so one memory is indexed in order): chunks, embeds and indexes a
 * document. A failure is redelivered until the document has failed `maxIndexAttempts` times in this process; then
 * the document is marked failed and the message is done.
 */
export function ingestConsumer(memory: MemoryDeps): GraphConsumer {
  const logger = memory.logger;
  /** Failed attempts per event in this process; bounded by the number of failing messages in flight. */
  const attempts = new Map<string, number>();
  return {
    name: 'ingest',
    topic: TOPICS.memoryIngest,
    groupId: (group) => group,
    async handle(message: BusMessage): Promise<void> {
      const msg = parseMessage(logger, MemoryIngestMessageSchema, message);
      if (!msg) return;
      const eventId = eventIdOf(message) ?? msg.event_id;
      try {
        // Its own span inside the message's `process lore.memory.ingest`: the events it emits continue from here.
        const outcome = await inSpan('index document', { 'lore.tenant.id': msg.tenant_id, 'lore.document.id': msg.doc_id }, async (span) => {
          const result = await indexDocument(memory, msg, eventId);
          span.setAttribute('lore.index.outcome', result);
          return result;
        });
        attempts.delete(eventId);
        logger.debug({ doc_id: msg.doc_id, outcome }, 'ingest message handled');
      } catch (err) {
        const n = (attempts.get(eventId) ?? 0) + 1;
        attempts.set(eventId, n);
        if (n < memory.config.maxIndexAttempts) {
          logger.warn({ err, doc_id: msg.doc_id, attempt: n }, 'indexing failed; the message will be redelivered');
          throw err;
        }
        attempts.delete(eventId);
        logger.error({ err, doc_id: msg.doc_id, attempts: n }, 'indexing failed repeatedly; marking the document failed');
        await failDocument(memory, msg, eventId, 'indexing failed repeatedly');
      }
    },
    async deadLettered(message: BusMessage): Promise<void> {
      const msg = parsedOrNull(MemoryIngestMessageSchema, message);
      if (!msg) return;
      await failDocument(memory, msg, eventIdOf(message) ?? msg.event_id, `the document ${DEAD_LETTER_REASON}`);
      logger.warn({ doc_id: msg.doc_id }, 'a dead-lettered document was marked failed');
    },
  };
}
