import pino from 'pino';

/** What pino needs of a destination, plus the flushes it calls on `logger.flush()` and at exit. */
export interface LogDestination {
  write(line: string): boolean;
  flush(cb?: (err?: Error) => void): void;
  flushSync(): void;
}

/** A turn's lines are written at once when they reach this many characters (bounds what one turn holds). */
const MAX_PENDING_CHARS = 64 * 1024;

/**
 * Log lines written during one event-loop turn leave together, in one write at the end of the turn (or sooner when
 * a turn has written 64 KiB), instead of one write per line: a busy service writes an access line per request, and
 * a system call per line was most of what the line cost. Nothing waits longer than the turn that wrote it, every
 * line keeps its order, and the lines of the last turn are written synchronously when the process exits (an exit
 * that runs no `exit` handler, such as SIGKILL, loses at most that one turn's lines). The writes themselves go to
 * `target` synchronously (pino's sonic-boom, which also rides out a full pipe).
 */
export class TurnBatchedDestination implements LogDestination {
  private pending = '';
  private scheduled = false;
  private readonly atTurnEnd = () => {
    this.scheduled = false;
    this.flushSync();
  };

  constructor(private readonly target: { write(data: string): boolean; flush?(cb?: (err?: Error) => void): void; flushSync?(): void }) {}

  write(line: string): boolean {
    this.pending += line;
    if (this.pending.length >= MAX_PENDING_CHARS) this.flushSync();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.atTurnEnd);
    }
    return true;
  }

  flushSync(): void {
    if (this.pending === '') return;
    const out = this.pending;
    this.pending = '';
    this.target.write(out);
  }

  flush(cb?: (err?: Error) => void): void {
    this.flushSync();
    if (this.target.flush) this.target.flush(cb);
    else cb?.();
  }
}

const byFd = new Map<number, TurnBatchedDestination>();

/**
 * The destination every logger of the process shares for file descriptor `fd` (standard output by default): one
 * per descriptor, so lines of several loggers keep their order. Flushed on exit.
 */
export function processLogDestination(fd = 1): TurnBatchedDestination {
  let d = byFd.get(fd);
  if (d === undefined) {
    const target = pino.destination({ dest: fd, sync: true });
    const made = new TurnBatchedDestination(target);
    process.on('exit', () => made.flushSync());
    byFd.set(fd, (d = made));
  }
  return d;
}

/** The same batching in front of a file (`/dev/null` in the benchmarks: the cost of logging without a disk). */
export function fileLogDestination(path: string): TurnBatchedDestination {
  const made = new TurnBatchedDestination(pino.destination({ dest: path, sync: true }));
  process.on('exit', () => made.flushSync());
  return made;
}
