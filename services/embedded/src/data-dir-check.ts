import { open, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { HealthCheck } from '@lore/runtime';

/** The probe's file, inside the data directory; a leftover one is overwritten and removed by the next probe. */
export const WRITE_PROBE = '.write-probe';

/**
 * Readiness of the data directory: a small file written, flushed to disk and removed, at most once every `everyMs`
 * (probes come every few seconds; between two writes the last answer stands). Everything embedded mode keeps lives
 * under the directory (its database, blobs, secrets), so one that was removed, remounted read-only, filled up or had
 * its permissions taken away makes every write fail: `/readyz` then says so (503) instead of ready.
 */
export function dataDirCheck(dataDir: string, everyMs = 5_000, now: () => number = Date.now): HealthCheck {
  const path = join(dataDir, WRITE_PROBE);
  let last: { at: number; error: string | null } | null = null;
  let running: Promise<string | null> | null = null;

  const probe = async (): Promise<string | null> => {
    try {
      const file = await open(path, 'w', 0o600);
      try {
        await file.writeFile('lore\n');
        await file.sync();
      } finally {
        await file.close();
      }
      await unlink(path);
      return null;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return `the data directory is not writable (${code ?? (err instanceof Error ? err.message : String(err))})`;
    }
  };

  return async () => {
    if (!last || now() - last.at >= everyMs) {
      running ??= probe().finally(() => {
        running = null;
      });
      const error = await running;
      last = { at: now(), error };
    }
    return last.error === null ? { ok: true } : { ok: false, details: { error: last.error } };
  };
}
