// The whole runtime: the light kit (also importable alone as `@lore/runtime/kit`, see kit.ts) and the ports with
// their adapters, whose drivers (PGlite, pg, ioredis, kafkajs) load with this module.
export * from './kit';
export * from './ports/db';
export * from './ports/cache';
export * from './ports/event-bus';
export * from './ports/blob-store';
export * from './db/migrate';
export * from './db/postgres';
export * from './db/pglite';
export * from './crypto/secret-box';
export * from './cache/memory-cache';
export * from './cache/redis-cache';
export * from './cache/gcra';
export * from './bus/memory-bus';
export * from './bus/kafka-bus';
export * from './bus/event-id';
export { busMetrics, type BusMetrics } from './bus/metrics';
export type { HandlerRetry } from './bus/retry';
export * from './bus/poison';
export * from './bus/naming';
export * from './bus/dead-letters';
export * from './outbox/outbox';
export * from './outbox/start-relay';
export * from './blob/postgres-blob-store';
export * from './http/body';
export * from './http/routes';
export { validateOpenApiDocument, type OpenApiValidation } from './http/openapi-validate';
