import { TOPICS } from '@lore/contracts';
import { afterFailure, LAST_STEP, RETRY_DELAYS_MS, topicForStep, topicForWait } from './schedule';

describe('retry schedule', () => {
  const t0 = new Date('2025-01-01T00:00:00.000Z');

  it('follows the documented delays 1, 2, 4, 8 and 30 seconds, then dead-letters', () => {
    const delays: number[] = [];
    let step = 0;
    for (;;) {
      const move = afterFailure(step, t0);
      if (move.kind === 'dead') break;
      delays.push(move.dueAt.getTime() - t0.getTime());
      expect(move.step).toBe(step + 1);
      expect(move.topic).toBe(topicForStep(move.step));
      step = move.step;
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 30000]);
    expect(step).toBe(LAST_STEP);
    expect(RETRY_DELAYS_MS).toHaveLength(5);
  });

  it('uses one topic per delay and the deliveries topic for first attempts', () => {
    expect(topicForStep(0)).toBe(TOPICS.webhookDeliveries);
    expect([1, 2, 3, 4, 5].map(topicForStep)).toEqual([
      TOPICS.webhookRetry1s,
      TOPICS.webhookRetry2s,
      TOPICS.webhookRetry4s,
      TOPICS.webhookRetry8s,
      TOPICS.webhookRetry30s,
    ]);
  });

  it('rejects steps outside the schedule', () => {
    expect(() => afterFailure(6, t0)).toThrow(RangeError);
    expect(() => afterFailure(-1, t0)).toThrow(RangeError);
    expect(() => topicForStep(6)).toThrow(RangeError);
  });

  it('puts a message that must wait on a topic whose delay covers the wait, its own when that suffices', () => {
    expect(topicForWait(0, 0)).toBe(TOPICS.webhookDeliveries);
    expect(topicForWait(0, 1)).toBe(TOPICS.webhookRetry1s);
    expect(topicForWait(0, 2_500)).toBe(TOPICS.webhookRetry4s);
    expect(topicForWait(2, 1_500)).toBe(TOPICS.webhookRetry2s);
    expect(topicForWait(1, 7_000)).toBe(TOPICS.webhookRetry8s);
    expect(topicForWait(5, 12_000)).toBe(TOPICS.webhookRetry30s);
    expect(topicForWait(1, 60_000)).toBe(TOPICS.webhookRetry30s);
  });
});
