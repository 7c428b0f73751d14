import { readFileSync } from 'node:fs';
import { open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '@lore/runtime';

/** `<data dir>/lore.pid`: the process that holds the data directory. */
export const LOCK_FILE = 'lore.pid';

export interface DataDirLock {
  /** Gives the directory back (removes the file while it still names this process). */
  release(): Promise<void>;
}

/** True when a process with this pid exists (signal 0 checks without sending anything). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else; still a holder.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * True when `pid` is a running Lore embedded process. A pid is reused: after a container restart the pid in an old
 * file may be another process's (the `npm start` wrapper's, say), which must not keep Lore from starting. Where the
 * kernel shows command lines (Linux `/proc`), the process must run embedded mode's entry; elsewhere, being alive is
 * all that can be known.
 */
export function isLoreProcess(pid: number): boolean {
  if (!alive(pid)) return false;
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return true;
  }
  return /embedded[\\/](?:src|dist)[\\/]main\.[cm]?[jt]s\b/.test(cmdline);
}

/**
 * Takes the data directory for this process, before anything opens its database: the embedded PostgreSQL is one
 * process's files, and a second process opening them while the first runs (a second `npm start`, even one that then
 * fails on a port in use) corrupts them beyond opening. The lock is a pid file created exclusively, as PostgreSQL's
 * own `postmaster.pid`: a file whose process is gone (a kill -9, a crash) is stale and taken over; one whose process
 * runs refuses this start with a clear message, and nothing is opened.
 */
export async function lockDataDir(dataDir: string, pid = process.pid, holds: (pid: number) => boolean = isLoreProcess): Promise<DataDirLock> {
  const file = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(file, 'wx', 0o600);
      await handle.writeFile(`${pid}\n`);
      await handle.close();
      return {
        async release() {
          const holder = await readFile(file, 'utf8').catch(() => '');
          if (Number.parseInt(holder, 10) === pid) await rm(file, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
    if (Number.isInteger(holder) && holder > 0 && holder !== pid && holds(holder)) {
      throw new ConfigError([
        `LORE_DATA_DIR: ${dataDir} is in use by another Lore process (pid ${holder}); stop it first, or give this one another LORE_DATA_DIR (two processes on one embedded database would corrupt it). If no Lore runs there, delete ${file}.`,
      ]);
    }
    // Stale (its process is gone or is no Lore, or the file is empty or unreadable): take it over.
    await rm(file, { force: true });
  }
  throw new ConfigError([`LORE_DATA_DIR: could not take ${join(dataDir, LOCK_FILE)}: another process keeps creating it`]);
}
