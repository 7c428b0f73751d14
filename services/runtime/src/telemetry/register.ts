/**
 * Preload: `node --require ./dist/telemetry/register.js main.js` or `node --import …/register.ts` (tsx). It must run
 * before any other module so the HTTP instrumentation can wrap `node:http` before a server or client loads it.
 * Starts the OpenTelemetry SDK when `OTEL_EXPORTER_OTLP_ENDPOINT` or `LORE_OTEL_ENABLED` is set; otherwise installs
 * W3C propagation only. `shutdownTelemetry()` flushes it at shutdown.
 */
import { startTelemetry } from './setup';

startTelemetry();
