import type { Logger } from 'pino';
import { shutdownTelemetry } from '../telemetry/setup';

export type HealthCheck = () => Promise<{ ok: boolean; details?: Record<string, unknown> }>;

interface ShutdownHook {
  name: string;
  fn: () => Promise<void>;
  timeoutMs: number;
}

/**
 * Startup and shutdown of one process. Readiness is false until `markStarted` and false again from the first
 * moment of shutdown, so load balancers drain the process before its server closes.
 */
export class Lifecycle {
  private started = false;
  private stopping = false;
  private readonly hooks: ShutdownHook[] = [];
  private readonly checks = new Map<string, HealthCheck>();
  private shutdownPromise?: Promise<void>;

  constructor(private readonly logger: Logger) {
    // Registered first, so it runs last: spans of the drain itself are flushed too.
    this.onShutdown('tracer', shutdownTelemetry, 5_000);
  }

  /** Registers a readiness check for a dependency (database, cache, broker...). */
  addCheck(name: string, check: HealthCheck): void {
    this.checks.set(name, check);
  }

  /** Hooks run in reverse registration order: the last thing started is the first stopped. */
  onShutdown(name: string, fn: () => Promise<void>, timeoutMs = 10_000): void {
    this.hooks.push({ name, fn, timeoutMs });
  }

  markStarted(): void {
    this.started = true;
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  async readiness(): Promise<{ ready: boolean; checks: Record<string, unknown> }> {
    const checks: Record<string, unknown> = {};
    if (!this.started || this.stopping) {
      return { ready: false, checks: { lifecycle: this.stopping ? 'stopping' : 'starting' } };
    }
    let ready = true;
    await Promise.all(
      [...this.checks].map(async ([name, check]) => {
        try {
          const r = await withTimeout(check(), 2_000, `readiness check ${name}`);
          checks[name] = { ok: r.ok, ...(r.details ?? {}) };
          if (!r.ok) ready = false;
        } catch (err) {
          ready = false;
          checks[name] = { ok: false, error: err instanceof Error ? err.message : String(err) };
        }
      }),
    );
    return { ready, checks };
  }

  shutdown(reason = 'shutdown'): Promise<void> {
    if (this.shutdownPromise) return this.shutdownPromise;
    this.stopping = true;
    this.logger.info({ reason }, 'shutting down');
    this.shutdownPromise = (async () => {
      for (const hook of [...this.hooks].reverse()) {
        try {
          await withTimeout(hook.fn(), hook.timeoutMs, hook.name);
          this.logger.debug({ hook: hook.name }, 'shutdown hook done');
        } catch (err) {
          this.logger.error({ err, hook: hook.name }, 'shutdown hook failed');
        }
      }
      this.logger.info('shutdown complete');
    })();
    return this.shutdownPromise;
  }

  /**
   * Wires SIGTERM/SIGINT to a graceful shutdown, then exits. One Ctrl-C often arrives twice: a terminal signals its
   * whole foreground process group, and a launcher in that group (`npm start`'s script) forwards it to its child as
   * well. A repeat within `repeatWindowMs` of the first signal is that same interrupt and is ignored; a later one is a
   * user who will not wait, and exits at once (code 130), as a process without handlers would.
   */
  installSignalHandlers(exit: (code: number) => void = (c) => process.exit(c), signals: Pick<NodeJS.Process, 'on'> = process, repeatWindowMs = 2000): void {
    let first: number | undefined;
    const handler = (signal: NodeJS.Signals) => {
      if (first === undefined) {
        first = performance.now();
        void this.shutdown(signal).then(() => exit(0));
        return;
      }
      if (performance.now() - first < repeatWindowMs) return;
      this.logger.warn({ signal }, 'signalled again while shutting down: exiting now');
      exit(130);
    };
    signals.on('SIGTERM', handler);
    signals.on('SIGINT', handler);
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    timer.unref?.();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
