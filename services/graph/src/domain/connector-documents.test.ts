import { hasText, normalizeGroups, planUpsert, sameAccess, slices, type CurrentCopy } from './connector-documents';

const copy = (extra: Partial<CurrentCopy> = {}): CurrentCopy => ({ doc_id: 'doc_1', connector_hash: 'h1', access_public: true, access_groups: [], ...extra });

describe('a connector\'s push of one document', () => {
  it('creates a document the memory does not hold', () => {
    expect(planUpsert(null, 'h1', { public: true, groups: [] })).toEqual({ kind: 'create' });
  });

  it('replaces the copy when the content hash differs', () => {
    expect(planUpsert(copy(), 'h2', { public: true, groups: [] })).toEqual({ kind: 'replace', docId: 'doc_1' });
    // A copy stored without a hash is never taken for the same content.
    expect(planUpsert(copy({ connector_hash: null }), 'h1', { public: true, groups: [] })).toEqual({ kind: 'replace', docId: 'doc_1' });
  });

  it('keeps the copy when the hash is the same, changing nothing when access is the same too', () => {
    expect(planUpsert(copy({ access_groups: [3, 1] }), 'h1', { public: true, groups: [1, 3, 3] })).toEqual({ kind: 'unchanged', docId: 'doc_1', access: null });
  });

  it('keeps the copy and sets its access when only who may see it changed', () => {
    expect(planUpsert(copy(), 'h1', { public: false, groups: [] })).toEqual({ kind: 'unchanged', docId: 'doc_1', access: { public: false, groups: [] } });
    expect(planUpsert(copy({ access_groups: [1] }), 'h1', { public: true, groups: [2, 1, 2] })).toEqual({
      kind: 'unchanged',
      docId: 'doc_1',
      access: { public: true, groups: [1, 2] },
    });
  });
});

describe('access and batches', () => {
  it('compares groups as sets', () => {
    expect(normalizeGroups([5, 1, 5, -2])).toEqual([-2, 1, 5]);
    expect(sameAccess(copy({ access_groups: [2, 1] }), { public: true, groups: [1, 2, 2] })).toBe(true);
    expect(sameAccess(copy({ access_groups: [1] }), { public: true, groups: [1, 2] })).toBe(false);
    expect(sameAccess(copy(), { public: false, groups: [] })).toBe(false);
  });

  it('skips a text with nothing to index', () => {
    expect(hasText('')).toBe(false);
    expect(hasText(' \n\t ')).toBe(false);
    expect(hasText(' a ')).toBe(true);
  });

  it('cuts a list into slices of at most the given size', () => {
    expect(slices([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(slices([], 100)).toEqual([]);
    expect(slices(Array.from({ length: 250 }, (_, i) => i), 100).map((s) => s.length)).toEqual([100, 100, 50]);
    expect(() => slices([1], 0)).toThrow(RangeError);
  });
});
