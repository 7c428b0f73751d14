/**
 * `@lore/runtime/kit`: the light part of the runtime — config, logging, errors, the Koa app with probes and
 * metrics, lifecycle, the internal identity and telemetry. It loads none of the adapters' drivers (PGlite,
 * pg, ioredis, kafkajs), so a process that needs no database, cache or bus (the operator, a CLI) imports this
 * instead of the root `@lore/runtime`, which re-exports everything here plus the ports' adapters.
 */
export * from './config/config';
export * from './config/default-ports';
export * from './log/logger';
export * from './log/destination';
export * from './errors/app-error';
export * from './http/app';
export * from './http/server';
export * from './http/validate';
export * from './http/event-stream';
export * from './metrics/registry';
export * from './lifecycle/lifecycle';
export * from './lifecycle/until-aborted';
export * from './lifecycle/consumer-groups-check';
export * from './work/tenant-turns';
export * from './identity/internal-identity';
export * from './telemetry/propagation';
export * from './telemetry/http';
export * from './telemetry/spans';
export { startTelemetry, shutdownTelemetry, telemetryWanted, type TelemetryHandle } from './telemetry/setup';
