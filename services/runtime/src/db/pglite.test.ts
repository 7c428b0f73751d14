jest.setTimeout(60_000);

import { mkdtemp, rm } from 'node:fs/promises';
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
});
