import { PgliteDb } from '../db/pglite';
import { runRuntimeMigrations } from '../outbox/outbox';
import { announceBlob, settleBlob, sweepAbandonedBlobs } from './blob-intents';
import { PostgresBlobStore } from './postgres-blob-store';

jest.setTimeout(60_000);

describe('blob intents', () => {
  it('sweeps the bytes of keys announced and never settled, once old enough, and only the owner\'s', async () => {
    const db = await PgliteDb.open();
    try {
      await runRuntimeMigrations(db);
      const blobs = new PostgresBlobStore(db);
      const write = async (owner: string, key: string) => {
        await announceBlob(db, owner, 't1', key);
        await blobs.put('t1', key, Buffer.from(`bytes of ${key}`), 'text/plain');
      };
      await write('graph', 'uploads/settled');
      await write('graph', 'uploads/abandoned');
      await write('agents', 'imports/abandoned');
      // The record of the first one commits with its settlement.
      await db.withTenant('t1', (sql) => settleBlob(sql, 't1', 'uploads/settled'));
      // Nothing is old enough yet: a put running now is left alone.
      expect(await sweepAbandonedBlobs(db, blobs, 'graph', 60_000)).toBe(0);
      await db.query(`UPDATE runtime.blob_intents SET created_at = now() - interval '2 hours'`);
      expect(await sweepAbandonedBlobs(db, blobs, 'graph', 60_000)).toBe(1);
      const left = async (key: string) => (await blobs.get('t1', key)) !== null;
      expect([await left('uploads/settled'), await left('uploads/abandoned'), await left('imports/abandoned')]).toEqual([true, false, true]);
      expect((await db.query<{ blob_key: string }>(`SELECT blob_key FROM runtime.blob_intents ORDER BY blob_key`)).rows).toEqual([{ blob_key: 'imports/abandoned' }]);
      // A second sweep finds nothing more of its own.
      expect(await sweepAbandonedBlobs(db, blobs, 'graph', 60_000)).toBe(0);
    } finally {
      await db.close();
    }
  });
});
