import { createLogger, createMetricsRegistry } from '@lore/runtime/kit';
import { Controller } from './controller';
import { createOperatorMetrics } from './metrics';

const logger = createLogger({ level: 'silent', service: 'test' });
const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

function controller(reconcile: (key: string) => Promise<{ requeueAfterMs?: number } | void>, workers = 4) {
  const registry = createMetricsRegistry('test', { defaultMetrics: false });
  const c = new Controller({ name: 'test', reconcile, logger, metrics: createOperatorMetrics(registry), workers, backoff: { baseMs: 20, maxMs: 200, jitter: 0 } });
  return { c, registry };
}

describe('Controller', () => {
  it('never runs two reconciles of one key at once, and reconciles again after adds made meanwhile', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const { c } = controller(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      runs++;
      await tick(30);
      running--;
    });
    c.start();
    c.enqueue('ns/a');
    await tick(5);
    for (let i = 0; i < 10; i++) c.enqueue('ns/a');
    await tick(150);
    expect(maxRunning).toBe(1);
    expect(runs).toBe(2);
    await c.stop();
  });

  it('runs different keys in parallel up to the worker count', async () => {
    let running = 0;
    let maxRunning = 0;
    const { c } = controller(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await tick(30);
      running--;
    }, 3);
    c.start();
    for (const k of ['a', 'b', 'c', 'd', 'e']) c.enqueue(`ns/${k}`);
    await tick(120);
    expect(maxRunning).toBe(3);
    await c.stop();
  });

  it('retries a failing key with growing backoff, counts the errors by kind, and resets after a success', async () => {
    const times: number[] = [];
    let failures = 3;
    const { c, registry } = controller(async () => {
      times.push(Date.now());
      if (failures-- > 0) throw Object.assign(new Error('platform down'), { kind: 'platform' });
    });
    c.start();
    c.enqueue('ns/a');
    await tick(400);
    expect(times).toHaveLength(4);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps[0]!).toBeGreaterThanOrEqual(18);
    expect(gaps[1]!).toBeGreaterThanOrEqual(38);
    expect(gaps[2]!).toBeGreaterThanOrEqual(78);
    expect(c.queue.failuresOf('ns/a')).toBe(0);
    const text = await registry.metrics();
    expect(text).toContain('lore_operator_reconcile_errors_total{controller="test",kind="platform",service="test"} 3');
    await c.stop();
  });

  it('honours requeue-after', async () => {
    let runs = 0;
    const { c } = controller(async () => {
      runs++;
      return runs === 1 ? { requeueAfterMs: 50 } : undefined;
    });
    c.start();
    c.enqueue('ns/a');
    await tick(20);
    expect(runs).toBe(1);
    await tick(80);
    expect(runs).toBe(2);
    await c.stop();
  });

  it('names the object of a failed reconcile in its log line (a field the logger does not redact)', async () => {
    const lines: string[] = [];
    const captured = createLogger({ level: 'warn', service: 'test', destination: { write: (l: string) => void lines.push(l) } });
    const registry = createMetricsRegistry('test', { defaultMetrics: false });
    const c = new Controller({
      name: 'test',
      reconcile: async () => {
        throw new Error('socket hang up');
      },
      logger: captured,
      metrics: createOperatorMetrics(registry),
      backoff: { baseMs: 1_000, maxMs: 1_000, jitter: 0 },
    });
    c.start();
    c.enqueue('team/notes');
    await tick(30);
    await c.stop();
    const line = JSON.parse(lines.find((l) => l.includes('reconcile failed'))!);
    expect(line).toMatchObject({ object: 'team/notes', err: 'socket hang up' });
    expect(JSON.stringify(line)).not.toContain('[redacted]');
  });
});
