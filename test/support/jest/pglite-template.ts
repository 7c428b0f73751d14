// The unit project's global setup: one PGlite database created from nothing, dumped to a file every suite's new
// database starts from (`LORE_PGLITE_TEMPLATE`, services/runtime/src/db/pglite.ts). Creating a database from nothing
// takes 3–4 s of CPU on the project's 2-core machine and the unit suites open about a hundred; from the dump it takes
// about 0.6 s. The workers start after this setup, so they inherit the variable. The integration suites create
// their embedded databases from nothing, as a user's first start does.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PgliteDb } from '../../../services/runtime/src/db/pglite';

export default async function setup(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'lore-pglite-template-'));
  const path = join(dir, 'template.tar');
  await PgliteDb.writeTemplate(path);
  process.env.LORE_PGLITE_TEMPLATE = path;
  process.env.LORE_PGLITE_TEMPLATE_DIR = dir;
}

export async function teardown(): Promise<void> {
  const dir = process.env.LORE_PGLITE_TEMPLATE_DIR;
  if (dir) rmSync(dir, { recursive: true, force: true });
}
