import pino, { type Logger, type LoggerOptions } from 'pino';
import { trace } from '@opentelemetry/api';

export type { Logger } from 'pino';

/** Paths never written to logs: credentials, auth headers, cookies and anything named like a secret. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'req.headers["x-lore-identity"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers.cookie',
  '*.password',
  '*.secret',
  '*.api_key',
  '*.apiKey',
  '*.token',
  '*.key',
  '*.plaintext',
  '*.signing_secret',
  'password',
  'secret',
  'api_key',
  'token',
  'plaintext',
];

export interface LoggerConfig {
  level: string;
  service: string;
  /** Optional destination stream (tests capture output through it). */
  destination?: pino.DestinationStream;
}

export function createLogger(config: LoggerConfig): Logger {
  const options: LoggerOptions = {
    level: config.level,
    base: { service: config.service },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    // Every line carries the active trace so logs and traces join up.
    mixin() {
      const span = trace.getActiveSpan();
      if (!span) return {};
      const ctx = span.spanContext();
      return { trace_id: ctx.traceId, span_id: ctx.spanId };
    },
  };
  return config.destination ? pino(options, config.destination) : pino(options);
}
