import { z } from 'zod';

/** Every Kafka topic Lore uses. Topic names live only here. */
export const TOPICS = {
  memoryIngest: 'lore.memory.ingest',
  memoryUploads: 'lore.memory.uploads',
  memoryLifecycle: 'lore.memory.lifecycle',
  events: 'lore.events',
  webhookDeliveries: 'lore.webhook.deliveries',
  webhookRetry1s: 'lore.webhook.retry.1s',
  webhookRetry2s: 'lore.webhook.retry.2s',
  webhookRetry4s: 'lore.webhook.retry.4s',
  webhookRetry8s: 'lore.webhook.retry.8s',
  webhookRetry30s: 'lore.webhook.retry.30s',
  webhookDead: 'lore.webhook.dead',
  graphJobs: 'lore.graph.jobs',
  connectorsIndex: 'lore.connectors.index',
  /** Agents workflows to run (company and people search, enrichment), keyed by `<tenant>:<thread id>`. */
  agentsWorkflows: 'lore.agents.workflows',
  /**
   * Credits a workflow consumed (agents → gateway), keyed by tenant: `CreditUsageEvent` (credits.ts). The gateway
   * takes them off the tenant's `credit_balance`, once per `event_id`.
   */
  creditsUsage: 'lore.credits.usage',
  /**
   * A tenant's credit balance as the gateway last set it (gateway → agents), keyed by tenant: `CreditBalanceEvent`.
   * Running workflows end when it is used up.
   */
  creditsBalance: 'lore.credits.balance',
  /**
   * Poison messages of every consumer: a message whose handler kept failing past its subscription's bound, with the
   * reason in `lore-dead-*` headers (services/runtime/src/bus/poison.ts). Not webhook delivery failures: those are
   * `webhookDead`.
   */
  dead: 'lore.dead',
} as const;

export type TopicName = (typeof TOPICS)[keyof typeof TOPICS];

/**
 * Where a consumer group that has never committed starts on each topic (docs/runtime.md, "Starting offsets").
 * `earliest` for topics that carry durable work: a job or event published before its worker first joined must still
 * be done, and consumers are idempotent on `event_id`, so a replay of what the topic retains is safe. `latest` for
 * the dead-letter topic: a consumer attached later (an alert, a dashboard) wants new poison messages, not the
 * backlog an operator already lists with the CLI. With `LORE_KAFKA_PREFIX`, each install has its own topics, so a
 * new group never replays another install's history.
 */
export const NEW_GROUP_START: Record<TopicName, 'earliest' | 'latest'> = {
  [TOPICS.memoryIngest]: 'earliest',
  [TOPICS.memoryUploads]: 'earliest',
  [TOPICS.memoryLifecycle]: 'earliest',
  [TOPICS.events]: 'earliest',
  [TOPICS.webhookDeliveries]: 'earliest',
  [TOPICS.webhookRetry1s]: 'earliest',
  [TOPICS.webhookRetry2s]: 'earliest',
  [TOPICS.webhookRetry4s]: 'earliest',
  [TOPICS.webhookRetry8s]: 'earliest',
  [TOPICS.webhookRetry30s]: 'earliest',
  [TOPICS.webhookDead]: 'latest',
  [TOPICS.graphJobs]: 'earliest',
  [TOPICS.connectorsIndex]: 'earliest',
  [TOPICS.agentsWorkflows]: 'earliest',
  [TOPICS.creditsUsage]: 'earliest',
  [TOPICS.creditsBalance]: 'earliest',
  [TOPICS.dead]: 'latest',
};

/** The seven public event kinds of spec 1 (webhook subscriptions choose among these). */
export const EVENT_KINDS = [
  'memory.ingest.completed',
  'memory.ingest.dlp_flagged',
  'memory.ingest.auto_routed',
  'memory.entity.created',
  'memory.entity.contradiction_detected',
  'memory.entity.contradiction_resolved',
  'memory.health.assessed',
] as const;

export type EventKind = (typeof EVENT_KINDS)[number];

export const EventScopeSchema = z.object({
  tenant_id: z.string(),
  workspace_id: z.string(),
  memory_id: z.string(),
});

/**
 * The domain event envelope: the same shape travels on `lore.events` and is delivered to webhook receivers.
 * `occurred_at` is ISO 8601 UTC with milliseconds.
 */
export const EventEnvelopeSchema = z.object({
  event_id: z.string().min(1),
  event: z.enum(EVENT_KINDS),
  occurred_at: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
  scope: EventScopeSchema,
  payload: z.record(z.string(), z.unknown()),
});

export type EventEnvelope = z.infer<typeof EventEnvelopeSchema>;
export type EventScope = z.infer<typeof EventScopeSchema>;

/** ISO 8601 UTC with exactly three fractional digits. */
export function isoMillis(date: Date = new Date()): string {
  return date.toISOString();
}
