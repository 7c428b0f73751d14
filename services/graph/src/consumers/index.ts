import type { MemoryDeps } from '../application/context';
import type { GraphConsumer } from './consumer';
import { graphJobConsumer } from './graph-jobs';
import { ingestConsumer } from './ingest';
import { lifecycleConsumer } from './lifecycle';
import { uploadConsumer } from './uploads';

export type { GraphConsumer } from './consumer';

/** Every consumer of the graph worker, one module each, in the order the worker subscribes them. */
export function graphConsumers(memory: MemoryDeps): GraphConsumer[] {
  return [ingestConsumer(memory), uploadConsumer(memory), lifecycleConsumer(memory), graphJobConsumer(memory)];
}
