import { PgliteDb } from '../db/pglite';
import { runRuntimeMigrations } from '../outbox/outbox';
import { MemoryStartJournal, PostgresStartJournal, type ConsumerStartJournal } from './start-journal';

jest.setTimeout(60_000);

/** The same rules for both implementations. */
function describeJournal(name: string, open: () => Promise<{ journal: ConsumerStartJournal; close(): Promise<void> }>) {
  describe(name, () => {
    let journal: ConsumerStartJournal;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ journal, close } = await open());
    });
    afterAll(() => close());

    it('counts starts at the same offset, and starts again at 1 on another offset', async () => {
      expect(await journal.record('g', 'lore.events', 0, '41')).toBe(1);
      expect(await journal.record('g', 'lore.events', 0, '41')).toBe(2);
      expect(await journal.record('g', 'lore.events', 0, '41')).toBe(3);
      expect(await journal.record('g', 'lore.events', 0, '42')).toBe(1);
      expect(await journal.record('g', 'lore.events', 0, '41')).toBe(1);
    });

    it('keeps groups, topics and partitions apart', async () => {
      expect(await journal.record('apart', 't', 0, '7')).toBe(1);
      expect(await journal.record('apart', 't', 1, '7')).toBe(1);
      expect(await journal.record('apart', 'u', 0, '7')).toBe(1);
      expect(await journal.record('other', 't', 0, '7')).toBe(1);
      expect(await journal.record('apart', 't', 0, '7')).toBe(2);
    });

    it('takes offsets beyond 2^53 exactly', async () => {
      expect(await journal.record('big', 't', 0, '9007199254740993')).toBe(1);
      expect(await journal.record('big', 't', 0, '9007199254740992')).toBe(1);
      expect(await journal.record('big', 't', 0, '9007199254740992')).toBe(2);
    });

    it('forgets a partition: the next start counts 1 again', async () => {
      await journal.record('f', 't', 0, '5');
      await journal.record('f', 't', 0, '5');
      await journal.forget('f', 't', 0);
      expect(await journal.record('f', 't', 0, '5')).toBe(1);
    });

    it('forgets at an offset only while the record is still at that offset', async () => {
      await journal.record('c', 't', 0, '5');
      await journal.record('c', 't', 0, '9');
      await journal.record('c', 't', 0, '9');
      await journal.forget('c', 't', 0, '5');
      expect(await journal.record('c', 't', 0, '9')).toBe(3);
      await journal.forget('c', 't', 0, '9');
      expect(await journal.record('c', 't', 0, '9')).toBe(1);
      // Forgetting what was never recorded is no error.
      await journal.forget('never', 't', 3, '1');
      await journal.forget('never', 't', 3);
    });
  });
}

describeJournal('MemoryStartJournal', async () => ({ journal: new MemoryStartJournal(), close: async () => undefined }));

describeJournal('PostgresStartJournal (PGlite, runtime migrations)', async () => {
  const db = await PgliteDb.open();
  await runRuntimeMigrations(db);
  return { journal: new PostgresStartJournal(db), close: () => db.close() };
});
