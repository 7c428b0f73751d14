import { randomBytes } from 'node:crypto';

/** Opaque ids with a readable prefix: `wh_` subscriptions, `dlv_` deliveries. 96 random bits. */
export function newId(prefix: 'wh' | 'dlv'): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

export const ID_PATTERN = /^(wh|dlv)_[0-9a-f]{24}$/;
