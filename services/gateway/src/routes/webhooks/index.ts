export { registerWebhookRoutes, presentWebhook, presentDelivery, type WebhookRoutesDeps } from './handlers';
export * from './schema';
