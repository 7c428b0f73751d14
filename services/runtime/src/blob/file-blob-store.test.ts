import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PgliteDb } from '../db/pglite';
import { runRuntimeMigrations } from '../outbox/outbox';
import { describeBlobStoreContract } from './blob-store.contract';
import { FileBlobStore } from './file-blob-store';
import { PostgresBlobStore } from './postgres-blob-store';

jest.setTimeout(60_000);

describeBlobStoreContract('FileBlobStore', async () => {
  const root = await mkdtemp(join(tmpdir(), 'lore-file-blobs-'));
  return { store: new FileBlobStore(root), close: () => rm(root, { recursive: true, force: true }) };
});

describe('FileBlobStore over the store it replaces', () => {
  it('reads what the earlier store kept, writes anew as files, and deletes from both', async () => {
    const root = await mkdtemp(join(tmpdir(), 'lore-file-blobs-'));
    const db = await PgliteDb.open();
    try {
      await runRuntimeMigrations(db);
      const before = new PostgresBlobStore(db);
      await before.put('t1', 't1/uploads/old', Buffer.from('kept in the database'), 'text/plain');
      const store = new FileBlobStore(root, before);
      expect((await store.get('t1', 't1/uploads/old'))?.data.toString()).toBe('kept in the database');
      expect((await store.stat('t1', ['t1/uploads/old'])).map((i) => i.key)).toEqual(['t1/uploads/old']);
      // Written again: a file now, and the database's copy gone.
      await store.put('t1', 't1/uploads/old', Buffer.from('now a file'), 'text/plain');
      expect(await before.get('t1', 't1/uploads/old')).toBeNull();
      expect((await store.get('t1', 't1/uploads/old'))?.data.toString()).toBe('now a file');
      // Replaced again: the new bytes under a new name, the description naming them, the old bytes gone.
      await store.put('t1', 't1/uploads/old', Buffer.from('replaced'), 'text/plain');
      expect((await store.get('t1', 't1/uploads/old'))?.data.toString()).toBe('replaced');
      const [t1Folder] = await readdir(root);
      expect((await readdir(join(root, t1Folder!))).filter((n) => n.endsWith('.bin'))).toHaveLength(1);
      await before.put('t1', 't1/uploads/other', Buffer.from('x'), 'text/plain');
      await store.delete('t1', 't1/uploads/other');
      expect(await store.get('t1', 't1/uploads/other')).toBeNull();
      // A key never names a path: hashed names in one folder per tenant, no temporary file left.
      await store.put('t2', '../../etc/passwd', Buffer.from('y'), 'text/plain');
      const folders = await readdir(root);
      expect(folders).toHaveLength(2);
      for (const f of folders) for (const name of await readdir(join(root, f))) expect(name).toMatch(/^[0-9a-f]{64}\.(?:[0-9a-f-]{36}\.bin|json)$/);
      expect(await store.get('t1', '../../etc/passwd')).toBeNull();
    } finally {
      await db.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('FileBlobStore.sweepUnfinished', () => {
  it('removes the pieces of puts a crash cut short, and nothing of a finished blob or of a put running now', async () => {
    const root = await mkdtemp(join(tmpdir(), 'lore-file-blobs-'));
    try {
      const store = new FileBlobStore(root);
      await store.put('t1', 'kept', Buffer.from('a finished blob'), 'text/plain');
      const [tenantDir] = await readdir(root);
      const dir = join(root, tenantDir!);
      const finished = new Set(await readdir(dir));
      // What a process killed inside `put` leaves: bytes without their description, and temporary files.
      const pieces = [`${'a'.repeat(64)}.${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}.bin`, `${'b'.repeat(64)}.json.1234.tmp`, `${'c'.repeat(64)}.x.bin.5678.tmp`];
      for (const p of pieces) await writeFile(join(dir, p), 'unmasked bytes');
      // A put running now: its pieces are younger than the threshold.
      expect(await store.sweepUnfinished(60_000)).toBe(0);
      expect(await readdir(dir)).toHaveLength(finished.size + pieces.length);
      expect(await store.sweepUnfinished(60_000, Date.now() + 120_000)).toBe(3);
      expect(new Set(await readdir(dir))).toEqual(finished);
      expect((await store.get('t1', 'kept'))?.data.toString()).toBe('a finished blob');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
