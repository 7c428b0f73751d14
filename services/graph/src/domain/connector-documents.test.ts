import { hasText, normalizeGroups, planBatch, planUpsert, sameAccess, slices, writesNothing, type BatchItem, type ConnectorAccess, type CurrentCopy } from './connector-documents';

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

describe('a whole batch, planned as pushing its documents one after another', () => {
  const PUBLIC: ConnectorAccess = { public: true, groups: [] };
  const item = (id: string, contentHash: string, text = true): BatchItem => ({ id, contentHash, hasText: text });
  const ids = () => {
    let n = 0;
    return () => `doc_new${++n}`;
  };
  const copies = (entries: Array<[string, Partial<CurrentCopy>]>) => new Map(entries.map(([id, extra]) => [id, copy(extra)]));

  it('creates, replaces, keeps and skips, answering in input order', () => {
    const plan = planBatch(
      [item('new', 'h'), item('changed', 'h2'), item('same', 'h1'), item('empty', 'h', false), item('empty-held', 'hx', false)],
      copies([['changed', { doc_id: 'doc_changed' }], ['same', { doc_id: 'doc_same' }], ['empty-held', { doc_id: 'doc_held' }]]),
      PUBLIC,
      ids(),
    );
    expect(plan.steps).toEqual([
      { outcome: 'created', docId: 'doc_new1' },
      { outcome: 'updated', docId: 'doc_new2' },
      { outcome: 'unchanged', docId: 'doc_same' },
      { outcome: 'skipped', docId: null },
      { outcome: 'skipped', docId: 'doc_held' },
    ]);
    expect(plan).toMatchObject({ accepted: [0, 1], stored: [0, 1], deleted: ['doc_changed'], accessChanged: [] });
    expect(writesNothing(plan)).toBe(false);
  });

  it('writes nothing for a batch held unchanged, access included, or only skipped', () => {
    const held = copies([['a', { doc_id: 'doc_a', access_groups: [2, 1] }]]);
    const same = planBatch([item('a', 'h1'), item('b', 'h', false)], held, { public: true, groups: [1, 2, 1] }, ids());
    expect(same.steps).toEqual([{ outcome: 'unchanged', docId: 'doc_a' }, { outcome: 'skipped', docId: null }]);
    expect(writesNothing(same)).toBe(true);
    expect(writesNothing(planBatch([], held, PUBLIC, ids()))).toBe(true);
  });

  it('sets the access of a kept copy whose access changed, once, with the batch\'s normalised groups', () => {
    const plan = planBatch([item('a', 'h1'), item('a', 'h1')], copies([['a', { doc_id: 'doc_a' }]]), { public: false, groups: [9, 3, 9] }, ids());
    expect(plan.steps).toEqual([{ outcome: 'unchanged', docId: 'doc_a' }, { outcome: 'unchanged', docId: 'doc_a' }]);
    expect(plan).toMatchObject({ accepted: [], deleted: [], accessChanged: ['doc_a'] });
    expect(writesNothing(plan)).toBe(false);
  });

  it('decides a source id pushed twice against the copy the first push left', () => {
    // The same content twice: created, then unchanged with the first's new document.
    const same = planBatch([item('a', 'h'), item('a', 'h')], new Map(), PUBLIC, ids());
    expect(same.steps).toEqual([{ outcome: 'created', docId: 'doc_new1' }, { outcome: 'unchanged', docId: 'doc_new1' }]);
    expect(same).toMatchObject({ accepted: [0], stored: [0], deleted: [], accessChanged: [] });
    // Another content: the second replaces the first, whose row is then never stored; the held copy goes once.
    const twice = planBatch([item('a', 'h2'), item('b', 'h'), item('a', 'h3'), item('a', 'h3', false)], copies([['a', { doc_id: 'doc_a' }]]), PUBLIC, ids());
    expect(twice.steps).toEqual([
      { outcome: 'updated', docId: 'doc_new1' },
      { outcome: 'created', docId: 'doc_new2' },
      { outcome: 'updated', docId: 'doc_new3' },
      { outcome: 'skipped', docId: 'doc_new3' },
    ]);
    expect(twice).toMatchObject({ accepted: [0, 1, 2], stored: [1, 2], deleted: ['doc_a'], accessChanged: [] });
  });

  it('does not set the access of a copy the batch then replaces', () => {
    const plan = planBatch([item('a', 'h1'), item('a', 'h2')], copies([['a', { doc_id: 'doc_a' }]]), { public: false, groups: [] }, ids());
    expect(plan.steps.map((s) => s.outcome)).toEqual(['unchanged', 'updated']);
    expect(plan).toMatchObject({ deleted: ['doc_a'], accessChanged: [], stored: [1] });
  });
});
