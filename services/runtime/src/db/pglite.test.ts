jest.setTimeout(60_000);

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeDbContract } from './db.contract';
import { PgliteDb } from './pglite';

describeDbContract('PGlite (embedded)', async () => {
  const db = await PgliteDb.open();
  return { db, close: () => db.close() };
});

describe('PgliteDb', () => {
  it('reopens a persistent data directory with its data and roles intact', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lore-pglite-'));
    try {
      const first = await PgliteDb.open(dir);
      await first.asOwner((sql) => sql.query(`CREATE TABLE public.kept (v text); GRANT SELECT, INSERT ON public.kept TO lore_app`));
      await first.query(`INSERT INTO public.kept VALUES ($1)`, ['still here']);
      await first.close();
      const second = await PgliteDb.open(dir);
      expect((await second.query(`SELECT v FROM public.kept`)).rows).toEqual([{ v: 'still here' }]);
      expect(second.hasVector).toBe(true);
      await second.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('has pgvector', async () => {
    const db = await PgliteDb.open();
    try {
      const r = await db.query<{ d: number }>(`SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector AS d`);
      expect(r.rows[0]!.d).toBeCloseTo(1);
    } finally {
      await db.close();
    }
  });

  describe('a new database from LORE_PGLITE_TEMPLATE', () => {
    const saved = process.env.LORE_PGLITE_TEMPLATE;
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'lore-pglite-template-test-'));
    });
    afterAll(async () => {
      if (saved === undefined) delete process.env.LORE_PGLITE_TEMPLATE;
      else process.env.LORE_PGLITE_TEMPLATE = saved;
      await rm(dir, { recursive: true, force: true });
    });
    const markerCount = async (db: PgliteDb) =>
      Number((await db.asOwner((sql) => sql.query<{ n: string }>(`SELECT count(*) AS n FROM pg_tables WHERE tablename = 'template_marker'`))).rows[0]!.n);

    it('loads an in-memory or empty database from the dump, and opens a data directory that holds one as it is', async () => {
      // A dump with a marker table: a database that has it came from the dump, not from nothing.
      const source = new PGlite({ extensions: { vector } });
      await source.exec('CREATE EXTENSION IF NOT EXISTS vector; CREATE TABLE public.template_marker (v int)');
      const marked = join(dir, 'marked.tar');
      await writeFile(marked, Buffer.from(await (await source.dumpDataDir('none')).arrayBuffer()));
      await source.close();

      const existing = join(dir, 'existing');
      delete process.env.LORE_PGLITE_TEMPLATE;
      await (await PgliteDb.open(existing)).close();

      process.env.LORE_PGLITE_TEMPLATE = marked;
      const memory = await PgliteDb.open();
      expect(await markerCount(memory)).toBe(1);
      // The application role is there as after any open: policies apply to its work.
      expect((await memory.query<{ r: string }>(`SELECT current_user AS r`)).rows[0]!.r).toBe('lore_app');
      await memory.close();
      const fresh = await PgliteDb.open(join(dir, 'fresh'));
      expect(await markerCount(fresh)).toBe(1);
      await fresh.close();
      const kept = await PgliteDb.open(existing);
      expect(await markerCount(kept)).toBe(0);
      await kept.close();
    });

    it('writes a dump of a database as open leaves it', async () => {
      const path = join(dir, 'template.tar');
      await PgliteDb.writeTemplate(path);
      process.env.LORE_PGLITE_TEMPLATE = path;
      const db = await PgliteDb.open();
      try {
        expect(await markerCount(db)).toBe(0);
        const r = await db.query<{ d: number }>(`SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector AS d`);
        expect(r.rows[0]!.d).toBeCloseTo(1);
      } finally {
        await db.close();
      }
    });

    it('refuses a dump it cannot read', async () => {
      process.env.LORE_PGLITE_TEMPLATE = join(dir, 'missing.tar');
      await expect(PgliteDb.open()).rejects.toThrow(/LORE_PGLITE_TEMPLATE names a dump that cannot be read/);
    });
  });
});
