import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { waitFor } from '../../services/runtime/src/bus/bus.contract';
import { SPAN_KIND, startOtlpReceiver } from '../support/otlp-receiver';

jest.setTimeout(120_000);

const ROOT = join(__dirname, '..', '..');
const FIXTURE = join(__dirname, 'fixtures', 'traced-service.ts');
const REGISTER = join(ROOT, 'services', 'runtime', 'src', 'telemetry', 'register.ts');

interface Service {
  child: ChildProcess;
  port: number;
  events: Array<Record<string, unknown>>;
  stop(): Promise<void>;
}

async function startService(env: Record<string, string>): Promise<Service> {
  const child = spawn(process.execPath, ['--conditions=lore-src', '--import', 'tsx', '--import', REGISTER, FIXTURE], {
    cwd: ROOT,
    env: { ...process.env, LORE_TRACE_TOPIC: `lore.trace.${randomBytes(4).toString('hex')}`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: Array<Record<string, unknown>> = [];
  let stderr = '';
  let buffered = '';
  child.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) if (line.startsWith('{')) events.push(JSON.parse(line) as Record<string, unknown>);
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  try {
    await waitFor('the service to listen', () => events.some((e) => e.event === 'ready') || child.exitCode !== null, 60_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const ready = events.find((e) => e.event === 'ready');
  if (!ready) throw new Error(`service exited: ${stderr}`);
  return {
    child,
    port: ready.port as number,
    events,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function hop(port: number, traceparent: string): Promise<{ trace_id: string | null; downstream_traceparent: string | null }> {
  const res = await fetch(`http://127.0.0.1:${port}/hop`, { headers: { traceparent } });
  expect(res.status).toBe(200);
  return (await res.json()) as { trace_id: string | null; downstream_traceparent: string | null };
}

describe('OpenTelemetry preload: trace context through HTTP and Kafka', () => {
  const traceId = () => randomBytes(16).toString('hex');
  const spanId = () => randomBytes(8).toString('hex');

  it('with the SDK on, continues the caller’s trace through the server, an outgoing call and a Kafka message, and exports the spans', async () => {
    const receiver = await startOtlpReceiver();
    const service = await startService({
      LORE_OTEL_ENABLED: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_SERVICE_NAME: 'traced-test',
    });
    try {
      const T = traceId();
      const S = spanId();
      const answer = await hop(service.port, `00-${T}-${S}-01`);
      expect(answer.trace_id).toBe(T);
      // The outgoing call carries the trace with the client span as parent, not the caller's span.
      expect(answer.downstream_traceparent).toMatch(new RegExp(`^00-${T}-[0-9a-f]{16}-01$`));
      expect(answer.downstream_traceparent).not.toContain(S);
      await waitFor('the consumer', () => service.events.some((e) => e.event === 'consumed'), 60_000);
      const consumed = service.events.find((e) => e.event === 'consumed')!;
      expect(consumed.trace_id).toBe(T);
      expect(consumed.traceparent).toContain(T);

      await waitFor('exported spans', () => receiver.trace(T).length >= 4 && receiver.trace(T).some((s) => s.kind === SPAN_KIND.consumer), 30_000);
      const ofTrace = receiver.spans.filter((s) => s.traceId === T);
      // caller (S) → server span → client span → the downstream server's span, all in trace T.
      const serverSpan = ofTrace.find((s) => s.kind === SPAN_KIND.server && s.parentSpanId === S);
      expect(serverSpan).toBeDefined();
      const clientSpan = ofTrace.find((s) => s.kind === SPAN_KIND.client && s.parentSpanId === serverSpan!.spanId);
      expect(clientSpan).toBeDefined();
      expect(answer.downstream_traceparent).toContain(clientSpan!.spanId);
      expect(ofTrace.some((s) => s.kind === SPAN_KIND.server && s.parentSpanId === clientSpan!.spanId)).toBe(true);
      // The kit's server span is named by its route; the Kafka handler's span is a child of it (it published there).
      expect({ name: serverSpan!.name, route: serverSpan!.attributes['http.route'] }).toEqual({ name: 'GET /hop', route: '/hop' });
      const consumerSpan = ofTrace.find((s) => s.kind === SPAN_KIND.consumer)!;
      expect(consumerSpan.name).toMatch(/^process lore\.trace\.[0-9a-f]{8}$/);
      expect(consumerSpan.parentSpanId).toBe(serverSpan!.spanId);
      expect(consumerSpan.attributes).toMatchObject({ 'messaging.system': 'kafka', 'messaging.operation.type': 'process' });
    } finally {
      await service.stop();
      await receiver.close();
    }
  });

  it('with the SDK off, still carries the caller’s trace id into the request and onto Kafka messages', async () => {
    const service = await startService({ LORE_OTEL_ENABLED: '', OTEL_EXPORTER_OTLP_ENDPOINT: '' });
    try {
      const T = traceId();
      const answer = await hop(service.port, `00-${T}-${spanId()}-01`);
      expect(answer.trace_id).toBe(T);
      await waitFor('the consumer', () => service.events.some((e) => e.event === 'consumed'), 60_000);
      expect(service.events.find((e) => e.event === 'consumed')!.trace_id).toBe(T);
    } finally {
      await service.stop();
    }
  });
});
