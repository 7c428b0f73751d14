/**
 * `promise`, or a rejection with `reason()` (the signal's own reason unless told) as soon as `signal` aborts: a wait
 * that must end at a deadline or a cancellation whatever the awaited work does. The promise itself is not
 * cancelled; it runs on, and what it answers later is dropped.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal, reason: () => unknown = () => signal.reason): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      // Nobody waits for `promise` any more: its own failure must not surface as an unhandled rejection.
      promise.catch(() => undefined);
      return reject(reason());
    }
    const onAbort = () => reject(reason());
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
