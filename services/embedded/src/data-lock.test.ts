import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@lore/runtime';
import { isLoreProcess, LOCK_FILE, lockDataDir } from './data-lock';

describe('the data directory lock', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'lore-embedded-lock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a second holder while the first runs, and lets the directory go on release', async () => {
    // The parent of this test process (jest's runner or the shell) stands for a Lore that runs.
    const running = process.ppid;
    const lore = (pid: number) => pid === running;
    const first = await lockDataDir(dir, running);
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(`${running}\n`);
    const refused = await lockDataDir(dir, process.pid, lore).then(() => null, (e: unknown) => e);
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).problems).toEqual([expect.stringMatching(new RegExp(`is in use by another Lore process \\(pid ${running}\\)`))]);
    await first.release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    const mine = await lockDataDir(dir);
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(`${process.pid}\n`);
    await mine.release();
  });

  it('takes over a file whose process is gone, or that is empty', async () => {
    // A pid that existed and ended: a child that exited.
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
    writeFileSync(join(dir, LOCK_FILE), `${gone}\n`);
    const taken = await lockDataDir(dir);
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(`${process.pid}\n`);
    await taken.release();
    writeFileSync(join(dir, LOCK_FILE), '');
    await (await lockDataDir(dir)).release();
  });

  it('takes over a file whose pid now belongs to a process that is no Lore (a pid reused after a restart)', async () => {
    // This test's parent runs, but is no Lore embedded process.
    expect(isLoreProcess(process.ppid)).toBe(false);
    writeFileSync(join(dir, LOCK_FILE), `${process.ppid}\n`);
    const taken = await lockDataDir(dir);
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(`${process.pid}\n`);
    await taken.release();
  });

  it('does not remove a file another process has taken since', async () => {
    const lock = await lockDataDir(dir);
    writeFileSync(join(dir, LOCK_FILE), `${process.ppid}\n`);
    await lock.release();
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(`${process.ppid}\n`);
  });
});
