export { webhookRoutes, type WebhookRouteDeps } from './routes';
export * from './schema';
