import { randomBytes } from 'node:crypto';

/** Opaque subscription ids with a readable prefix (`wh_`), 96 random bits. Delivery ids (`dlv_`) are made in SQL. */
export function newId(prefix: 'wh'): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

