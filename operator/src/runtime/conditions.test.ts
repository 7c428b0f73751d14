import { setCondition, summarize, rfc3339 } from './conditions';

const t1 = new Date('2030-01-01T00:00:00.123Z');
const t2 = new Date('2030-01-02T00:00:00Z');

describe('conditions', () => {
  it('moves lastTransitionTime only when the status changes', () => {
    let c = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'A', message: 'a' }, 1, t1);
    expect(c).toEqual([{ type: 'Ready', status: 'False', reason: 'A', message: 'a', observedGeneration: 1, lastTransitionTime: '2030-01-01T00:00:00Z' }]);
    c = setCondition(c, { type: 'Ready', status: 'False', reason: 'B', message: 'b' }, 2, t2);
    expect(c[0]).toMatchObject({ reason: 'B', observedGeneration: 2, lastTransitionTime: '2030-01-01T00:00:00Z' });
    c = setCondition(c, { type: 'Ready', status: 'True', reason: 'C', message: 'c' }, 2, t2);
    expect(c[0]!.lastTransitionTime).toBe(rfc3339(t2));
  });

  it('keeps the order of other conditions so an unchanged status compares equal', () => {
    let c = setCondition(undefined, { type: 'A', status: 'True', reason: 'R', message: '' }, 1, t1);
    c = setCondition(c, { type: 'B', status: 'True', reason: 'R', message: '' }, 1, t1);
    const again = setCondition(c, { type: 'A', status: 'True', reason: 'R', message: '' }, 1, t2);
    expect(again).toEqual(c);
  });

  it('summarises into Ready / Reconciling / Stalled with the abnormal ones present only when true', () => {
    const progressing = summarize(undefined, { state: 'progressing', reason: 'Issuing', message: 'm' }, 3, t1);
    expect(progressing.map((c) => [c.type, c.status])).toEqual([['Ready', 'False'], ['Reconciling', 'True']]);
    const stalled = summarize(progressing, { state: 'stalled', reason: 'TenantNotAssigned', message: 'm' }, 3, t1);
    expect(stalled.map((c) => [c.type, c.status])).toEqual([['Ready', 'False'], ['Stalled', 'True']]);
    const ready = summarize(stalled, { state: 'ready', reason: 'Provisioned', message: 'm' }, 4, t2);
    expect(ready).toEqual([{ type: 'Ready', status: 'True', reason: 'Provisioned', message: 'm', observedGeneration: 4, lastTransitionTime: '2030-01-02T00:00:00Z' }]);
  });

  it('truncates very long messages to what the CRD accepts', () => {
    const c = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'R', message: 'x'.repeat(40_000) }, 1, t1);
    expect(c[0]!.message.length).toBeLessThanOrEqual(32_000);
  });
});
