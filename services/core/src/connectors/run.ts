import { untilAborted } from '@lore/runtime';
import { resolveLimits, timerDelay, type RunEvent, type RunOptions, type RunOutcome, type SourceLimits, type StopReason } from './source';

/** Why a run ends early or how it ended: thrown inside a run's reading, it becomes the run's outcome. */
export class StopRun extends Error {
  constructor(
    readonly reason: StopReason,
    readonly detail: string | null = null,
  ) {
    super(reason);
  }
}

/**
 * What one operation of a connector source (a load, a poll, a listing) keeps whatever it reads: its limits and
 * deadline, how it stopped, what it counted, and the caller's cancellation. The web and Google Drive sources run
 * as subclasses; `emit` hands their events out, counted, and stops at the document limit.
 */
export abstract class ConnectorRun {
  protected readonly limits: SourceLimits;
  protected readonly started = performance.now();
  protected readonly deadline: number;
  /** Aborted, with the run's StopRun, when it halts or ends: every wait of the run ends with it. */
  protected readonly controller = new AbortController();
  protected stop: StopRun | null = null;
  protected readonly counts = { yielded: 0, unchanged: 0, skipped: 0, requests: 0 };
  /** Undone when the run ends (listeners on the caller's signal). */
  protected readonly cleanup: Array<() => void> = [];

  constructor(run: RunOptions) {
    this.limits = resolveLimits(run.limits);
    this.deadline = this.started + this.limits.maxTotalMs;
    const signal = run.signal;
    const onAbort = () => this.halt(new StopRun('aborted', 'cancelled by the caller'));
    if (signal.aborted) onAbort();
    else {
      signal.addEventListener('abort', onAbort, { once: true });
      this.cleanup.push(() => signal.removeEventListener('abort', onAbort));
    }
  }

  /** Stops the run (the first reason wins) and ends its waits. */
  protected halt(stop: StopRun): void {
    if (this.stop) return;
    this.stop = stop;
    this.controller.abort(stop);
  }

  /** How the run ended; `completedDetail` notes something about a run that read everything. */
  protected outcome(completedDetail: string | null = null): RunOutcome {
    const stop = this.stop ?? new StopRun('completed', completedDetail);
    return { stop: stop.reason, detail: stop.detail, ...this.counts, elapsedMs: Math.round(performance.now() - this.started) };
  }

  /** Halts the run at its deadline (`max_time`); the caller clears the timer when the run ends. */
  protected deadlineTimer(): NodeJS.Timeout {
    return setTimeout(() => this.halt(new StopRun('max_time', `the time limit of ${this.limits.maxTotalMs} ms was reached`)), timerDelay(this.deadline - performance.now()));
  }

  /** An event out, counted; the document limit stops the run before a document (or id) past it. */
  protected async *emit(event: RunEvent): AsyncGenerator<RunEvent, void, undefined> {
    if (this.stop) return;
    if (event.kind === 'skipped') {
      this.counts.skipped += 1;
      yield event;
      return;
    }
    if (this.counts.yielded >= this.limits.maxDocuments) {
      this.halt(new StopRun('max_documents', `the document limit of ${this.limits.maxDocuments} was reached`));
      return;
    }
    this.counts.yielded += 1;
    yield event;
  }

  /** `promise`, or the run's stop as soon as it halts or ends. */
  protected untilHalted<T>(promise: Promise<T>): Promise<T> {
    return untilAborted(promise, this.controller.signal);
  }
}
