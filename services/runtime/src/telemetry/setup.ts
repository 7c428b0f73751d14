// Types only: loading node:http here, before the SDK starts, would keep it from being instrumented.
import type { ClientRequest, IncomingMessage } from 'node:http';
import { context, propagation, diag, DiagConsoleLogger, DiagLogLevel, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';

export interface TelemetryHandle {
  /** True when the OpenTelemetry SDK runs and exports spans; false in propagation-only mode. */
  readonly enabled: boolean;
  shutdown(): Promise<void>;
}

const HANDLE = Symbol.for('lore.telemetry');
type Global = typeof globalThis & { [HANDLE]?: TelemetryHandle };

const PROBE_PATHS = /^\/(livez|readyz|metrics)(\/|\?|$)/;

/** What a span keeps of a query string: its names, every value `REDACTED`. */
export function queryNamesOnly(query: string): string {
  const out = new URLSearchParams();
  for (const name of new URLSearchParams(query).keys()) out.append(name, 'REDACTED');
  return out.toString();
}

/**
 * A request's span keeps no query value (`url.query` of a server span, `url.full` of a client span). A query may hold
 * a key (`?api-key=` on a socket or stream a browser opens), a webhook receiver's token, or a user's search words;
 * logs already leave queries out (`http/access.ts`).
 */
export function redactQueryOfSpan(span: Pick<Span, 'setAttribute'>, request: ClientRequest | IncomingMessage): void {
  if (!('getHeader' in request)) {
    const url = request.url ?? '';
    const q = url.indexOf('?');
    if (q >= 0) span.setAttribute('url.query', queryNamesOnly(url.slice(q + 1)));
    return;
  }
  const path = request.path;
  const q = path.indexOf('?');
  if (q < 0) return;
  const host = request.getHeader('host') ?? request.host;
  span.setAttribute('url.full', `${request.protocol}//${String(host)}${path.slice(0, q)}?${queryNamesOnly(path.slice(q + 1))}`);
}

function truthy(v: string | undefined): boolean {
  return v !== undefined && ['1', 'true', 'yes'].includes(v.trim().toLowerCase());
}

/** The SDK runs when an OTLP endpoint is configured or `LORE_OTEL_ENABLED` asks for it, unless the SDK is disabled. */
export function telemetryWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if (truthy(env.OTEL_SDK_DISABLED)) return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || truthy(env.LORE_OTEL_ENABLED));
}

/**
 * Starts tracing once per process, before the modules it instruments are loaded (see `register.ts`). Either the
 * full SDK (HTTP server and client spans, OTLP export configured by the standard `OTEL_*` variables), or, when
 * telemetry is off, only W3C propagation and async context, so trace ids still flow through HTTP helpers, Kafka
 * headers and log lines at no export cost. Calling it again returns the first handle.
 */
export function startTelemetry(env: NodeJS.ProcessEnv = process.env): TelemetryHandle {
  const g = globalThis as Global;
  if (g[HANDLE]) return g[HANDLE];
  const handle = telemetryWanted(env) ? startSdk(env) : installPropagation();
  g[HANDLE] = handle;
  return handle;
}

/** Flushes and stops the SDK started by `startTelemetry` (a shutdown hook); a no-op when none runs. */
export async function shutdownTelemetry(): Promise<void> {
  await (globalThis as Global)[HANDLE]?.shutdown();
}

function installPropagation(): TelemetryHandle {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  return { enabled: false, shutdown: async () => undefined };
}

function startSdk(env: NodeJS.ProcessEnv): TelemetryHandle {
  // Required lazily: without telemetry the process never loads the SDK and its exporters.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  /* eslint-enable @typescript-eslint/no-require-imports */
  if (!env.OTEL_LOG_LEVEL) diag.setLogger(new DiagConsoleLogger(), DiagLogLevel.ERROR);
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? env.LORE_SERVICE ?? 'lore',
    textMapPropagator: new CompositePropagator({
      propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
    }),
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes would drown the traces that matter.
        ignoreIncomingRequestHook: (req) => PROBE_PATHS.test(req.url ?? ''),
        requestHook: redactQueryOfSpan,
      }),
    ],
    // Metrics go through prom-client's /metrics and logs through pino: the SDK exports traces only.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  return { enabled: true, shutdown: () => sdk.shutdown() };
}
