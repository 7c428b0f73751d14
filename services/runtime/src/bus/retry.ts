/** How a consumer retries a handler that threw: exponential backoff from `initialMs`, capped at `maxMs`. */
export interface HandlerRetry {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_HANDLER_RETRY: HandlerRetry = { initialMs: 200, maxMs: 10_000 };

export function backoffMs(retry: HandlerRetry, attempt: number): number {
  return Math.min(retry.maxMs, retry.initialMs * 2 ** Math.min(attempt - 1, 30));
}

/** A sleep that `abort()` ends early, so stopping a subscription never waits out a long backoff. */
export class Sleeper {
  private wake = new Set<() => void>();

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake.add(done);
    });
  }

  abort(): void {
    for (const done of [...this.wake]) done();
  }
}
