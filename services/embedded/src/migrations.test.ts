import { readdir } from 'node:fs/promises';
import { createLogger, PgliteDb } from '@lore/runtime';
import { EMBEDDED_MIGRATIONS, migrateEmbedded } from './migrations';

describe('embedded start migrates every schema and says what it applied (PGlite)', () => {
  let db: PgliteDb;
  const lines: Array<{ level: string; msg: string; schema?: string; applied?: string[] }> = [];
  const logger = createLogger({ level: 'info', service: 'lore-embedded', destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });

  beforeAll(async () => {
    db = await PgliteDb.open();
  });
  afterAll(async () => {
    await db?.close();
  });

  it('logs one line per schema with the files applied, gateway before the services that read it, and none once up to date', async () => {
    await migrateEmbedded(db, logger);
    const applied = lines.filter((l) => l.msg === 'migrations applied');
    expect(applied.map((l) => l.schema)).toEqual(['runtime', 'gateway', 'graph', 'core', 'agents']);
    for (const set of EMBEDDED_MIGRATIONS) {
      const numbered = (await readdir(set.dir)).filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f)).sort();
      expect(applied.find((l) => l.schema === set.schema)).toMatchObject({ level: 'info', applied: numbered });
    }

    lines.length = 0;
    expect(await migrateEmbedded(db, logger)).toEqual({});
    expect(lines).toEqual([]);
  });
});
