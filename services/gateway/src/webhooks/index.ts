export { createWebhooksWorker, DEFAULT_WORKER_CONFIG, WEBHOOK_TOPICS, type WebhooksWorker, type WebhooksWorkerConfig, type WebhooksWorkerDeps } from './worker';
export { WebhookService, type Viewer, type WebhookServiceOptions } from './subscriptions';
export { allowLoopbackSetting, refuseLoopbackInProduction, retentionDaysSetting, webhooksEnvSchema, workerConfigFromEnv, type WebhooksEnv } from './config';
export { RETRY_DELAYS_MS, RETRY_TOPICS } from './schedule';
export { generateSigningSecret, serviceSignature, signatureHeaders, verifyServiceSignature } from './signing';
export { serializeEnvelope } from './fan-out';
