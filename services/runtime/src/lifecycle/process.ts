import Koa from 'koa';
import type { Registry } from 'prom-client';
import type { z } from 'zod';
import { KafkaBus } from '../bus/kafka-bus';
import { PostgresStartJournal } from '../bus/start-journal';
import { ConfigError, parseConfig } from '../config/config';
import { PostgresDb } from '../db/postgres';
import { opsRouter } from '../http/app';
import { listen, type StartedServer } from '../http/server';
import { createLogger, type Logger } from '../log/logger';
import { createMetricsRegistry } from '../metrics/registry';
import { Lifecycle } from './lifecycle';

/** What every cluster-mode process of a service starts the same way (docs/service-template.md, "Processes"). */
export interface ServiceProcess<C> {
  config: C;
  logger: Logger;
  metrics: Registry;
  lifecycle: Lifecycle;
  db: PostgresDb;
}

/** The settings every service's schema names the same way. */
interface ProcessSettings {
  LORE_LOG_LEVEL: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  LORE_DATABASE_URL: string;
  LORE_DATABASE_OWNER_URL?: string | undefined;
}

/**
 * Config (parsed once from the environment; a problem throws `ConfigError`, which `exitOnConfigError` reports),
 * logger, metrics, a lifecycle with signal handlers and the PostgreSQL pool, registered for shutdown so that it
 * closes after everything registered later (shutdown runs in reverse order).
 */
export async function startServiceProcess<S extends z.ZodType<ProcessSettings>>(
  service: string,
  schema: S,
  options: {
    /** Settings this process needs beyond the schema's (a worker's Kafka): each problem, checked before any connection. */
    requires?: (config: z.infer<S>) => string[];
    maxConnections?: (config: z.infer<S>) => number | undefined;
  } = {},
): Promise<ServiceProcess<z.infer<S>>> {
  const config = parseConfig(schema, process.env);
  const problems = options.requires?.(config) ?? [];
  if (problems.length > 0) throw new ConfigError(problems);
  const logger = createLogger({ level: config.LORE_LOG_LEVEL, service });
  const metrics = createMetricsRegistry(service);
  const lifecycle = new Lifecycle(logger);
  lifecycle.installSignalHandlers();
  const maxConnections = options.maxConnections?.(config);
  const db = await new PostgresDb({ url: config.LORE_DATABASE_URL, ownerUrl: config.LORE_DATABASE_OWNER_URL, ...(maxConnections ? { maxConnections } : {}) }).init();
  lifecycle.onShutdown('database', () => db.close());
  return { config, logger, metrics, lifecycle, db };
}

/**
 * The process's Kafka bus, with the start journal that bounds crash loops (a message whose handling kills the
 * process is dead-lettered after a few starts on it; docs/runtime.md, "Poison messages"). It closes before the
 * database, so a graceful stop can clear its starts.
 */
export function processBus(proc: ServiceProcess<unknown>, settings: { brokers: string; prefix: string; clientId: string }): KafkaBus {
  const bus = new KafkaBus({
    brokers: settings.brokers.split(','),
    prefix: settings.prefix,
    clientId: settings.clientId,
    logger: proc.logger,
    metrics: proc.metrics,
    startJournal: new PostgresStartJournal(proc.db),
  });
  proc.lifecycle.onShutdown('event bus', () => bus.close());
  return bus;
}

/**
 * A worker's own listener for its probes and metrics. Start it before the consumers join: a slow join must not
 * look like a dead process.
 */
export async function serveOps(proc: Pick<ServiceProcess<unknown>, 'lifecycle' | 'metrics'>, port: number, host: string): Promise<StartedServer> {
  const ops = new Koa();
  ops.use(opsRouter(proc.lifecycle, proc.metrics).routes());
  const server = await listen(ops, port, host);
  proc.lifecycle.onShutdown('ops server', () => server.close());
  return server;
}
