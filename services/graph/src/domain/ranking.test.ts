import { ndcgAtK, recallAtK, reciprocalRankFusion } from './ranking';

describe('reciprocal rank fusion', () => {
  it('prefers documents both retrievers found', () => {
    const fused = reciprocalRankFusion([
      { name: 'text', ids: ['a', 'b', 'c'] },
      { name: 'vector', ids: ['c', 'd', 'a'] },
    ]);
    expect(fused.map((h) => h.id)).toEqual(['a', 'c', 'b', 'd']);
    expect(fused[0]?.ranks).toEqual({ text: 1, vector: 3 });
  });

  it('applies retriever weights and the limit', () => {
    const fused = reciprocalRankFusion(
      [
        { name: 'text', ids: ['a'], weight: 1 },
        { name: 'vector', ids: ['b'], weight: 2 },
      ],
      60,
      1,
    );
    expect(fused.map((h) => h.id)).toEqual(['b']);
  });

  it('counts a repeated id once per retriever', () => {
    const fused = reciprocalRankFusion([{ name: 'text', ids: ['a', 'a', 'b'] }]);
    expect(fused[0]?.score).toBeCloseTo(1 / 61);
  });
});

describe('metrics', () => {
  const rel = new Map([
    ['d1', 1],
    ['d2', 1],
  ]);
  it('gives nDCG 1 to an ideal ranking and less to a worse one', () => {
    expect(ndcgAtK(['d1', 'd2', 'x'], rel)).toBeCloseTo(1);
    expect(ndcgAtK(['x', 'd1', 'd2'], rel)).toBeLessThan(1);
    expect(ndcgAtK(['x', 'y'], rel)).toBe(0);
  });
  it('computes recall at k', () => {
    expect(recallAtK(['d1', 'x'], rel)).toBe(0.5);
    expect(recallAtK(['x', 'd2', 'd1'], rel, 2)).toBe(0.5);
  });
});
