/** Structural equality of JSON values (key order never matters; `undefined` fields count as absent). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => deepEqual(v, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => deepEqual(ao[k], bo[k]));
}

/**
 * True when every field the operator wants (`desired`) already has that value in `actual`. Fields only in
 * `actual` (defaults filled in by the API server, fields owned by other managers) are ignored, which is exactly
 * the part of an object a server-side apply owns. Arrays must match element by element. An empty desired map or
 * list matches an absent one. This is what lets a resync with nothing changed skip every write.
 */
export function isSubset(desired: unknown, actual: unknown): boolean {
  if (desired === undefined) return true;
  if (desired === null || typeof desired !== 'object') return desired === actual;
  if (Array.isArray(desired)) {
    if (actual === undefined && desired.length === 0) return true;
    if (!Array.isArray(actual) || actual.length !== desired.length) return false;
    return desired.every((v, i) => isSubset(v, actual[i]));
  }
  const d = desired as Record<string, unknown>;
  if (actual === undefined) return Object.values(d).every((v) => v === undefined || isEmptyContainer(v));
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
  const a = actual as Record<string, unknown>;
  return Object.keys(d).every((k) => isSubset(d[k], a[k]));
}

function isEmptyContainer(v: unknown): boolean {
  if (Array.isArray(v)) return v.length === 0;
  if (v && typeof v === 'object') return Object.values(v).every((x) => x === undefined || isEmptyContainer(x));
  return false;
}
