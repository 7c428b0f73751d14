import { createLogger, createMetricsRegistry } from '@lore/runtime';
import { createEmbeddedBus, EMBEDDED_BUS_RETAIN_PER_PARTITION } from './bus';

describe('the embedded event bus', () => {
  it('holds no more than its retention per partition once every group handled what was published', async () => {
    const bus = createEmbeddedBus({ logger: createLogger({ level: 'silent', service: 'test' }), metrics: createMetricsRegistry('test') });
    try {
      let handled = 0;
      const s = await bus.subscribe({ groupId: 'g', topics: ['lore.events'], fromBeginning: true }, async () => void handled++);
      const published = 200;
      for (let i = 0; i < published; i += 50) {
        await bus.publish('lore.events', Array.from({ length: 50 }, (_, j) => ({ key: `k${(i + j) % 17}`, value: JSON.stringify({ n: i + j }) })));
      }
      const deadline = Date.now() + 2_000;
      while (handled < published && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(handled).toBe(published);
      await new Promise((r) => setTimeout(r, 20));
      // 4 partitions, each at most the retention (none): memory no longer grows with what was delivered.
      expect((await bus.browse('lore.events', { limit: 10_000 })).length).toBeLessThanOrEqual(4 * EMBEDDED_BUS_RETAIN_PER_PARTITION);
      await s.stop();
    } finally {
      await bus.close();
    }
  });
});
