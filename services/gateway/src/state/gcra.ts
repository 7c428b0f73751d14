/**
 * Generic cell rate algorithm. A bucket is one number: the theoretical arrival time (TAT) of the next request.
 * With emission interval T = 1/rate and capacity `burst`, a request at `now` is admitted when
 * max(TAT, now) + T - burst*T <= now. Under sustained overload exactly `burst + rate*t` requests pass in t
 * seconds, which is what lets a test check the admitted share precisely. Times are integer microseconds.
 */
export interface GcraResult {
  allowed: boolean;
  /** The TAT to store when allowed (unchanged otherwise). */
  tat: number;
  remaining: number;
  retryAfterUs: number;
  resetAfterUs: number;
}

export function emissionIntervalUs(perSecond: number): number {
  return Math.max(1, Math.round(1_000_000 / perSecond));
}

export function gcra(storedTat: number | null, nowUs: number, intervalUs: number, burst: number): GcraResult {
  const tat = storedTat === null || storedTat < nowUs ? nowUs : storedTat;
  const newTat = tat + intervalUs;
  const allowAt = newTat - intervalUs * burst;
  if (nowUs < allowAt) {
    return { allowed: false, tat, remaining: 0, retryAfterUs: allowAt - nowUs, resetAfterUs: tat - nowUs };
  }
  const remaining = Math.max(0, Math.floor((nowUs - allowAt) / intervalUs));
  return { allowed: true, tat: newTat, remaining, retryAfterUs: 0, resetAfterUs: newTat - nowUs };
}
