import { lstat, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

/** `<data dir>/sockets.path`: the folder of the internal services' unix sockets, for the next start to clear. */
export const SOCKET_DIR_RECORD = 'sockets.path';

const SOCKET_DIR_NAME = /^lore-[A-Za-z0-9]{6}$/;

export interface SocketDir {
  path: string;
  /** Removes the folder and its record. */
  remove(): Promise<void>;
}

/**
 * A private folder for the internal services' sockets (the unix-socket path limit of about 100 bytes rules out the
 * data directory, whose path is the user's). A clean stop removes it; a kill -9 cannot, so the folder's path is
 * recorded in the data directory and the next start there removes what the last one left. Called with the data
 * directory's lock held, so the recorded folder belongs to a process that is gone. Only a folder of this process's
 * own shape, directly in the temporary directory and owned by this user, is removed; anything else the record
 * names is left alone.
 */
export async function openSocketDir(dataDir: string, tmp = tmpdir()): Promise<SocketDir> {
  const record = join(dataDir, SOCKET_DIR_RECORD);
  const left = (await readFile(record, 'utf8').catch(() => '')).trim();
  if (left && (await isOurSocketDir(left, tmp))) await rm(left, { recursive: true, force: true });
  const path = await mkdtemp(join(tmp, 'lore-'));
  await writeFile(record, `${path}\n`, { mode: 0o600 });
  return {
    path,
    async remove() {
      await rm(path, { recursive: true, force: true });
      const named = (await readFile(record, 'utf8').catch(() => '')).trim();
      if (named === path) await rm(record, { force: true });
    },
  };
}

async function isOurSocketDir(path: string, tmp: string): Promise<boolean> {
  if (dirname(path) !== tmp || !SOCKET_DIR_NAME.test(basename(path))) return false;
  const stat = await lstat(path).catch(() => null);
  if (!stat || !stat.isDirectory() || stat.isSymbolicLink()) return false;
  return typeof process.getuid !== 'function' || stat.uid === process.getuid();
}
