export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** Random spread added on top (fraction of the delay) so many failing keys do not retry in lockstep. */
  jitter: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 200, maxMs: 5 * 60_000, jitter: 0.1 };

/**
 * Per-key exponential backoff: the n-th consecutive failure of a key waits base * 2^(n-1), capped. A success
 * (`forget`) resets the key, so one flaky object never slows the others down.
 */
export class PerKeyBackoff {
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly opts: BackoffOptions = DEFAULT_BACKOFF,
    private readonly random: () => number = Math.random,
  ) {}

  /** Records a failure of `key` and returns how long to wait before retrying it. */
  next(key: string): number {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    const exp = Math.min(this.opts.maxMs, this.opts.baseMs * 2 ** Math.min(n - 1, 40));
    return Math.min(this.opts.maxMs, Math.round(exp * (1 + this.opts.jitter * this.random())));
  }

  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  forget(key: string): void {
    this.failures.delete(key);
  }
}
