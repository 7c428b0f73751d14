import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataDirCheck } from './data-dir-check';

describe('dataDirCheck', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lore-data-check-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is ready while the directory takes a write, and leaves nothing behind', async () => {
    expect(await dataDirCheck(dir)()).toEqual({ ok: true });
    expect(await readdir(dir)).toEqual([]);
  });

  it('is not ready once the directory is gone, and ready again when it is back', async () => {
    let clock = 0;
    const check = dataDirCheck(dir, 5_000, () => clock);
    expect((await check()).ok).toBe(true);
    await rm(dir, { recursive: true });
    // Within the interval the last answer stands; after it the probe runs again.
    expect((await check()).ok).toBe(true);
    clock += 5_000;
    expect(await check()).toEqual({ ok: false, details: { error: 'the data directory is not writable (ENOENT)' } });
    await mkdir(dir, { recursive: true });
    clock += 5_000;
    expect(await check()).toEqual({ ok: true });
  });

  it('is not ready when the probe cannot be written (a directory in its place)', async () => {
    await mkdir(join(dir, '.write-probe'));
    const r = await dataDirCheck(dir)();
    expect(r.ok).toBe(false);
    expect(String(r.details?.error)).toMatch(/^the data directory is not writable \(E[A-Z]+\)$/);
  });
});
