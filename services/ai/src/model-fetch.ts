import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { hasLocalModel } from './local-model-embedder';

export interface ModelFetchOptions {
  /** `scripts/fetch-model.sh`. */
  script: string;
  /** The folder the model goes to (passed to the script as `LORE_EMBEDDER_MODEL_DIR`). */
  modelDir: string;
  /**
   * The child's environment: the caller's (PATH, HOME, proxies, `PIP_*` settings such as an index mirror or
   * `PIP_FIND_LINKS`). The model folder is added.
   */
  env: NodeJS.ProcessEnv;
  /** The whole fetch is stopped after this long. Default 10 minutes. */
  timeoutMs?: number;
  /** Stops the fetch (shutdown). */
  signal?: AbortSignal;
}

/** The last lines a failing script wrote: enough to say why, never a flood. */
const STDERR_TAIL_CHARS = 600;

/**
 * Runs the fetch script as a child process, bounded in time, and resolves when the model folder is complete. It
 * never touches the event loop's budget: pip does the download in its own process. Rejects with the script's own
 * reason (no Python, no pip, no network, a checksum that does not match) or the timeout.
 */
export function fetchModel(options: ModelFetchOptions): Promise<void> {
  if (!existsSync(options.script)) return Promise.reject(new Error(`the fetch script ${options.script} is not here`));
  const timeoutMs = options.timeoutMs ?? 10 * 60_000;
  return new Promise<void>((resolve, reject) => {
    const child = spawn('bash', [options.script], {
      env: { ...options.env, LORE_EMBEDDER_MODEL_DIR: options.modelDir },
      stdio: ['ignore', 'ignore', 'pipe'],
      // Its own process group: a timeout or shutdown stops pip too, not only bash.
      detached: true,
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (piece: string) => {
      stderr = (stderr + piece).slice(-STDERR_TAIL_CHARS);
    });
    let reason: string | null = null;
    const kill = (why: string) => {
      reason = why;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => kill(`the fetch took longer than ${Math.round(timeoutMs / 1000)} s`), timeoutMs);
    timer.unref();
    const onAbort = () => kill('stopped');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      reject(new Error(`the fetch script could not start: ${err.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      if (reason) return reject(new Error(reason));
      if (code === 0 && hasLocalModel(options.modelDir)) return resolve();
      const said = stderr.trim().split('\n').slice(-3).join(' ').trim();
      reject(new Error(said ? `fetch script exited ${code}: ${said}` : `fetch script exited ${code}`));
    });
  });
}
