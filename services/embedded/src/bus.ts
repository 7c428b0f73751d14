import { MemoryBus, type MemoryBusOptions } from '@lore/runtime';

/**
 * Messages the embedded bus keeps per partition once every group that reads the topic has handled them: none.
 * The retention of `MemoryBus` is for groups that subscribe later with `fromBeginning`; in embedded mode every group
 * subscribes at start, before the one outbox relay publishes anything (embedded.ts), and the webhooks worker, the
 * only other publisher, publishes only to its own topics once its groups have joined. A retention would serve no
 * one and hold memory: with 10 000 a partition, ~1.4 KB a message and 64 partitions, up to about 0.9 GB that never
 * came back. Messages no group has handled yet are kept whatever this says, and `lore.dead` (read by no group, only
 * listed) and `lore.webhook.dead` (read by no group here) keep every dead letter until the process ends.
 */
export const EMBEDDED_BUS_RETAIN_PER_PARTITION = 0;

/** The process's in-memory bus; its counters (`lore_bus_*`) are the process's. */
export function createEmbeddedBus(deps: Required<Pick<MemoryBusOptions, 'logger' | 'metrics'>>): MemoryBus {
  return new MemoryBus({ logger: deps.logger, metrics: deps.metrics, retainPerPartition: EMBEDDED_BUS_RETAIN_PER_PARTITION });
}
