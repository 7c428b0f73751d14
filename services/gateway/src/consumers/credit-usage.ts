import { CreditUsageEventSchema, TOPICS } from '@lore/contracts';
import { componentLogger, counterOn, PoisonError, type BusMessage, type Db, type EventBus, type Logger, type Subscription } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { applyCharge } from '../application/credits';

/** The topics the credits consumer reads or may write (its balance announcements go through the outbox). */
export const CREDIT_TOPICS = [TOPICS.creditsUsage, TOPICS.creditsBalance] as const;

/** The consumer group's default name. */
export const CREDITS_CONSUMER_GROUP = 'gateway-credits';

export interface CreditUsageConsumerDeps {
  db: Db;
  bus: EventBus;
  logger: Logger;
  metrics?: Registry;
  /** Consumer group (default `gateway-credits`). */
  consumerGroup?: string;
  /**
   * Told after a charge changed a tenant's balance: a process that also answers requests (embedded mode) drops its
   * cached tenant, so the next request sees the new balance at once. Replicas elsewhere see it within two
   * tenant-cache lifetimes.
   */
  onBalanceChanged?: (tenantId: string) => void;
}

export interface CreditUsageConsumer {
  /** Creates the topics if needed and joins the consumer group. */
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly running: boolean;
}

/**
 * The gateway's consumer of `lore.credits.usage` (docs/gateway.md, "Credits"): each charge a metering service sent
 * is taken off the tenant's balance once (`applyCharge`). Runs in the `webhooks` deployment (the gateway's worker,
 * which has the event bus) and inside the embedded process on the in-memory bus. A malformed message is
 * dead-lettered at once; a database failure is retried by the bus.
 */
export function createCreditUsageConsumer(deps: CreditUsageConsumerDeps): CreditUsageConsumer {
  const logger = componentLogger(deps.logger, 'credits-consumer');
  const charges = counterOn(deps.metrics, { name: 'lore_gateway_credit_charges_total', help: 'Credit charges handled, by outcome (charged, not_metered, duplicate, unknown_tenant)', labelNames: ['outcome'] });
  const credits = counterOn(deps.metrics, { name: 'lore_gateway_credits_charged_total', help: 'Credits taken off metered tenants\' balances' });
  let subscription: Subscription | null = null;

  const handle = async (message: BusMessage): Promise<void> => {
    let event;
    try {
      event = CreditUsageEventSchema.parse(JSON.parse(message.value.toString('utf8')));
    } catch (err) {
      logger.error({ topic: message.topic, offset: message.offset }, 'malformed credit charge; dead-lettering it');
      throw new PoisonError('malformed message: it does not match its contract schema', { cause: err });
    }
    const { outcome, balance } = await applyCharge(deps.db, event);
    charges.inc({ outcome });
    if (outcome === 'charged') {
      credits.inc(event.credits);
      deps.onBalanceChanged?.(event.tenant_id);
    }
    if (outcome === 'unknown_tenant') logger.warn({ tenant_id: event.tenant_id, event_id: event.event_id }, 'credit charge for a tenant that does not exist; dropped');
    else logger.debug({ tenant_id: event.tenant_id, event_id: event.event_id, credits: event.credits, outcome, balance }, 'credit charge handled');
  };

  return {
    get running() {
      return subscription !== null;
    },
    async start() {
      if (subscription) return;
      await deps.bus.ensureTopics([...CREDIT_TOPICS]);
      subscription = await deps.bus.subscribe({ groupId: deps.consumerGroup ?? CREDITS_CONSUMER_GROUP, topics: [TOPICS.creditsUsage], fromBeginning: true }, handle);
    },
    async stop() {
      const s = subscription;
      subscription = null;
      await s?.stop();
    },
  };
}
