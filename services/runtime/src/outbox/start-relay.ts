import type { Lifecycle } from '../lifecycle/lifecycle';
import { OutboxRelay, type OutboxRelayOptions } from './outbox';

/**
 * Which processes run the outbox relay — the one rule, applied here for all of them:
 *
 * - every deployment that has an event bus and writes or consumes outbox events runs one unless its switch turns
 *   it off: `graph` and `graph-worker` (`LORE_GRAPH_RELAY`, default on) and the `webhooks` worker
 *   (`WEBHOOKS_RUN_OUTBOX_RELAY`, default on). Relays of one database take turns through an advisory lock, so an
 *   extra relay costs idle polls only, and whichever of these deployments is installed publishes the rows of all;
 * - the `gateway` runs none: it has no event bus. Its rows (memory lifecycle messages, webhook replays) are
 *   published by any relay above;
 * - embedded mode runs exactly one for the whole process, started after its consumers, and none inside the graph
 *   service it composes (`relay: false`).
 *
 * The relay publishes in id order, so one missing topic would hold back every later event: before it starts, the
 * topics the calling process knows rows may name are created if missing.
 */
export interface StartOutboxRelayOptions extends OutboxRelayOptions {
  /** The deployment running it (`graph`, `graph-worker`, `webhooks`, `embedded`), for the log. */
  process: string;
  /** The process's switch. Off: no relay, said once in the log. Default on. */
  enabled?: boolean;
  /** Topics outbox rows may name that must exist before the first publish. */
  topics: readonly string[];
  /** When given, the relay stops on shutdown; otherwise the caller stops it. */
  lifecycle?: Pick<Lifecycle, 'onShutdown'>;
}

/** Starts this process's outbox relay by the rule above; `null` when the process's switch is off. */
export async function startOutboxRelay(opts: StartOutboxRelayOptions): Promise<OutboxRelay | null> {
  const { process: name, enabled = true, topics, lifecycle, ...relayOptions } = opts;
  if (!enabled) {
    opts.logger.info({ process: name }, 'outbox relay off in this process: another process of the database relays');
    return null;
  }
  if (topics.length > 0) {
    await opts.bus.ensureTopics([...topics]);
    // So the first event after a start is published as fast as the next ones; should it fail, the first publish
    // connects as it would have.
    await opts.bus.preparePublish?.([...topics]).catch((err: unknown) => opts.logger.warn({ err, process: name }, 'could not prepare the outbox relay\'s publisher; its first publish connects'));
  }
  const relay = new OutboxRelay(relayOptions);
  relay.start();
  lifecycle?.onShutdown('outbox relay', () => relay.stop());
  opts.logger.info({ process: name }, 'outbox relay started');
  return relay;
}
