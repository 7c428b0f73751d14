import { GraphJobMessageSchema, TOPICS } from '@lore/contracts';
import { eventIdOf, type BusMessage } from '@lore/runtime';
import type { MemoryDeps } from '../application/context';
import { failDeadLetteredJob, processGraphJob } from '../application/knowledge-graphs';
import { DEAD_LETTER_REASON, parseMessage, parsedOrNull, type GraphConsumer } from './consumer';

/**
 * `lore.graph.jobs`: applies a knowledge-graph job (upload, connector ingest, generate). Input that cannot become a
 * graph fails the job with its reason and is never retried; only infrastructure errors reach the bus for
 * redelivery (docs/memory.md, "Knowledge graphs").
 */
export function graphJobConsumer(memory: MemoryDeps): GraphConsumer {
  const logger = memory.logger;
  return {
    name: 'graph-jobs',
    topic: TOPICS.graphJobs,
    groupId: (group) => `${group}-graph-jobs`,
    async handle(message: BusMessage): Promise<void> {
      const msg = parseMessage(logger, GraphJobMessageSchema, message);
      if (!msg) return;
      const outcome = await processGraphJob(memory, msg, eventIdOf(message) ?? msg.event_id);
      logger.info({ job_id: msg.job_id, graph_id: msg.graph_id, outcome }, 'graph job handled');
    },
    async deadLettered(message: BusMessage): Promise<void> {
      const msg = parsedOrNull(GraphJobMessageSchema, message);
      if (!msg) return;
      const outcome = await failDeadLetteredJob(memory, msg, eventIdOf(message) ?? msg.event_id, `the job ${DEAD_LETTER_REASON}`);
      logger.warn({ job_id: msg.job_id, graph_id: msg.graph_id, outcome }, 'a dead-lettered graph job was marked failed');
    },
  };
}
