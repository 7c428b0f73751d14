import { deepEqual, isSubset } from './equality';

describe('deepEqual', () => {
  it('ignores key order and undefined fields', () => {
    expect(deepEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
    expect(deepEqual({ a: 1, x: undefined }, { a: 1 })).toBe(true);
    expect(deepEqual([1, 2], [2, 1])).toBe(false);
    expect(deepEqual({ a: null }, { a: undefined })).toBe(false);
  });
});

describe('isSubset', () => {
  it('accepts fields the API server added and rejects any difference in ours', () => {
    const desired = { metadata: { labels: { a: '1' } }, spec: { rules: [{ host: 'h', http: { paths: [{ path: '/' }] } }] } };
    const actual = {
      metadata: { labels: { a: '1', other: 'x' }, uid: 'u', resourceVersion: '9' },
      spec: { rules: [{ host: 'h', http: { paths: [{ path: '/', pathType: 'Prefix' }] } }] },
      status: {},
    };
    expect(isSubset(desired, actual)).toBe(true);
    expect(isSubset({ ...desired, metadata: { labels: { a: '2' } } }, actual)).toBe(false);
    expect(isSubset({ spec: { rules: [] } }, actual)).toBe(false);
  });

  it('requires lists to match element by element', () => {
    expect(isSubset({ l: [{ a: 1 }] }, { l: [{ a: 1 }, { a: 2 }] })).toBe(false);
    expect(isSubset({ l: [{ a: 1 }, { a: 2 }] }, { l: [{ a: 2 }, { a: 1 }] })).toBe(false);
  });

  it('treats an empty desired map or list as matching an absent one', () => {
    expect(isSubset({ metadata: { annotations: {} }, tls: [] }, { metadata: {} })).toBe(true);
    expect(isSubset({ metadata: { annotations: { a: 'b' } } }, { metadata: {} })).toBe(false);
  });
});
