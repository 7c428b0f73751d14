import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSocketDir, SOCKET_DIR_RECORD } from './socket-dir';

describe('the sockets folder', () => {
  let data: string;
  let tmp: string;
  beforeEach(() => {
    data = mkdtempSync(join(tmpdir(), 'lore-embedded-data-'));
    tmp = mkdtempSync(join(tmpdir(), 'lore-embedded-tmp-'));
  });
  afterEach(() => {
    rmSync(data, { recursive: true, force: true });
    rmSync(tmp, { recursive: true, force: true });
  });

  it('is recorded in the data directory and removed with its record on a clean stop', async () => {
    const sockets = await openSocketDir(data, tmp);
    expect(sockets.path.startsWith(join(tmp, 'lore-'))).toBe(true);
    expect(existsSync(sockets.path)).toBe(true);
    expect(readFileSync(join(data, SOCKET_DIR_RECORD), 'utf8').trim()).toBe(sockets.path);
    await sockets.remove();
    expect(existsSync(sockets.path)).toBe(false);
    expect(existsSync(join(data, SOCKET_DIR_RECORD))).toBe(false);
  });

  it('removes the folder a killed process left, on the next start', async () => {
    const killed = await openSocketDir(data, tmp);
    writeFileSync(join(killed.path, 'graph.sock'), '');
    // No remove(): the process was killed. The next start clears it and records its own.
    const next = await openSocketDir(data, tmp);
    expect(existsSync(killed.path)).toBe(false);
    expect(next.path).not.toBe(killed.path);
    expect(readFileSync(join(data, SOCKET_DIR_RECORD), 'utf8').trim()).toBe(next.path);
    await next.remove();
  });

  it('leaves alone whatever else the record names', async () => {
    const elsewhere = mkdtempSync(join(data, 'lore-'));
    const misnamed = join(tmp, 'important');
    mkdirSync(misnamed);
    const target = mkdtempSync(join(tmp, 'lore-'));
    const link = join(tmp, 'lore-Link00');
    symlinkSync(target, link);
    for (const named of [elsewhere, misnamed, link, '/', '']) {
      writeFileSync(join(data, SOCKET_DIR_RECORD), `${named}\n`);
      const sockets = await openSocketDir(data, tmp);
      await sockets.remove();
    }
    expect(existsSync(elsewhere)).toBe(true);
    expect(existsSync(misnamed)).toBe(true);
    expect(existsSync(link)).toBe(true);
    expect(existsSync(target)).toBe(true);
  });
});
