import { CreditBalanceEventSchema } from '@lore/contracts';
import { componentLogger, PoisonError, type BusMessage } from '@lore/runtime';
import type { AgentsDeps } from '../application/context';
import { keepAnnouncedBalance } from '../application/credits';

/**
 * The agents worker's consumer of the gateway's `lore.credits.balance` (docs/agents.md, "Credits"): keeps each
 * tenant's newest announced balance (by version, so a late or repeated message changes nothing), which running
 * workflows read at their checkpoints. A malformed message is dead-lettered at once; a database failure is retried.
 */
export function creditBalanceConsumer(agents: Pick<AgentsDeps, 'db' | 'logger'>): (message: BusMessage) => Promise<void> {
  const logger = componentLogger(agents.logger, 'credit-balance-consumer');
  return async (message) => {
    let event;
    try {
      event = CreditBalanceEventSchema.parse(JSON.parse(message.value.toString('utf8')));
    } catch (err) {
      logger.error({ topic: message.topic, offset: message.offset }, 'malformed credit balance message; dead-lettering it');
      throw new PoisonError('malformed message: it does not match its contract schema', { cause: err });
    }
    const kept = await keepAnnouncedBalance(agents.db, event.tenant_id, event.credit_balance, event.version);
    logger.debug({ tenant_id: event.tenant_id, credit_balance: event.credit_balance, version: event.version, kept }, 'credit balance announced');
  };
}
