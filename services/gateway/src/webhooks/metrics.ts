import { counterOn, histogramOn } from '@lore/runtime';
import type { Counter, Histogram, Registry } from 'prom-client';

export interface WebhookMetrics {
  attempts: Counter<'outcome' | 'step'>;
  attemptDuration: Histogram<'outcome'>;
  lateness: Histogram<'step'>;
  deferred: Counter<'reason'>;
  deadLetters: Counter<'reason'>;
  endpointsDisabled: Counter;
  fanout: Counter<'result'>;
}

/**
 * Webhook metrics. Labels are closed sets (outcome, schedule step, reason); never tenant or endpoint ids. Registering
 * twice on one registry (embedded mode runs gateway and worker together) reuses what is there.
 */
export function webhookMetrics(registry?: Registry): WebhookMetrics {
  return {
    attempts: counterOn(registry, {
      name: 'lore_webhooks_attempts_total',
      help: 'Delivery attempts by outcome and schedule step (0 = first attempt)',
      labelNames: ['outcome', 'step'],
    }),
    attemptDuration: histogramOn(registry, {
      name: 'lore_webhooks_attempt_duration_seconds',
      help: 'Duration of delivery attempts, by outcome',
      labelNames: ['outcome'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
    lateness: histogramOn(registry, {
      name: 'lore_webhooks_schedule_lateness_seconds',
      help: 'How long after its due time an attempt started, by schedule step',
      labelNames: ['step'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 5, 30],
    }),
    deferred: counterOn(registry, {
      name: 'lore_webhooks_attempts_deferred_total',
      help: 'Attempts handed back to the bus without being made, by reason (endpoint_busy, leased, unknown_key)',
      labelNames: ['reason'],
    }),
    deadLetters: counterOn(registry, { name: 'lore_webhooks_dead_letters_total', help: 'Deliveries dead-lettered, by reason', labelNames: ['reason'] }),
    endpointsDisabled: counterOn(registry, { name: 'lore_webhooks_endpoints_disabled_total', help: 'Endpoints disabled automatically after repeated dead letters' }),
    fanout: counterOn(registry, { name: 'lore_webhooks_fanout_events_total', help: 'Domain events seen by the webhook fan-out, by result', labelNames: ['result'] }),
  };
}
