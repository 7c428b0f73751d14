import { Counter, Histogram, type Registry } from 'prom-client';

export interface WebhookMetrics {
  attempts: Counter<'outcome' | 'step'>;
  attemptDuration: Histogram<'outcome'>;
  lateness: Histogram<'step'>;
  deadLetters: Counter<'reason'>;
  endpointsDisabled: Counter;
  fanout: Counter<'result'>;
}

/**
 * Webhook metrics. Labels are closed sets (outcome, schedule step, reason); never tenant or endpoint ids. Registering
 * twice on one registry (embedded mode runs gateway and worker together) reuses what is there.
 */
export function webhookMetrics(registry?: Registry): WebhookMetrics {
  const registers = registry ? [registry] : [];
  function reuse<T>(name: string, make: () => T): T {
    const existing = registry?.getSingleMetric(name);
    return existing ? (existing as unknown as T) : make();
  }
  return {
    attempts: reuse(
      'lore_webhooks_attempts_total',
      () =>
        new Counter({
          name: 'lore_webhooks_attempts_total',
          help: 'Delivery attempts by outcome and schedule step (0 = first attempt)',
          labelNames: ['outcome', 'step'] as const,
          registers,
        }),
    ),
    attemptDuration: reuse(
      'lore_webhooks_attempt_duration_seconds',
      () =>
        new Histogram({
          name: 'lore_webhooks_attempt_duration_seconds',
          help: 'Duration of delivery attempts, by outcome',
          labelNames: ['outcome'] as const,
          buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
          registers,
        }),
    ),
    lateness: reuse(
      'lore_webhooks_schedule_lateness_seconds',
      () =>
        new Histogram({
          name: 'lore_webhooks_schedule_lateness_seconds',
          help: 'How long after its due time an attempt started, by schedule step',
          labelNames: ['step'] as const,
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 5, 30],
          registers,
        }),
    ),
    deadLetters: reuse(
      'lore_webhooks_dead_letters_total',
      () =>
        new Counter({
          name: 'lore_webhooks_dead_letters_total',
          help: 'Deliveries dead-lettered, by reason',
          labelNames: ['reason'] as const,
          registers,
        }),
    ),
    endpointsDisabled: reuse(
      'lore_webhooks_endpoints_disabled_total',
      () => new Counter({ name: 'lore_webhooks_endpoints_disabled_total', help: 'Endpoints disabled automatically after repeated dead letters', registers }),
    ),
    fanout: reuse(
      'lore_webhooks_fanout_events_total',
      () =>
        new Counter({
          name: 'lore_webhooks_fanout_events_total',
          help: 'Domain events seen by the webhook fan-out, by result',
          labelNames: ['result'] as const,
          registers,
        }),
    ),
  };
}
