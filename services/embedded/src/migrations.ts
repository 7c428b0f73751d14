import { RUNTIME_MIGRATIONS, runMigrations, type Db, type Logger, type MigrationSet } from '@lore/runtime';
import { GATEWAY_MIGRATIONS_DIR } from '@lore/gateway';
import { GRAPH_MIGRATIONS } from '@lore/graph';
import { CORE_MIGRATIONS } from '@lore/core';
import { AGENTS_MIGRATIONS } from '@lore/agents';

/**
 * Every service's migrations, in the order the chart's migrations Job applies them (charts/lore/files/migrate.js):
 * the runtime's, then the gateway's before the others, whose migrations may read what it holds (core's 0012 and
 * agents' 0009 follow an API key's lineage in `gateway.api_keys`).
 */
export const EMBEDDED_MIGRATIONS: readonly MigrationSet[] = [
  RUNTIME_MIGRATIONS,
  { schema: 'gateway', dir: GATEWAY_MIGRATIONS_DIR },
  GRAPH_MIGRATIONS,
  CORE_MIGRATIONS,
  AGENTS_MIGRATIONS,
];

/**
 * Applies every pending migration before any service starts (the services then start with `migrate: false`), and
 * logs one `migrations applied` line per schema that had some, naming the files, as the Job does: a data directory
 * upgraded in place says what the upgrade changed. Returns the files applied, by schema.
 */
export async function migrateEmbedded(db: Db, logger: Logger, sets: readonly MigrationSet[] = EMBEDDED_MIGRATIONS): Promise<Record<string, string[]>> {
  const applied: Record<string, string[]> = {};
  for (const set of sets) {
    const files = await runMigrations(db, set);
    if (files.length === 0) continue;
    applied[set.schema] = files;
    logger.info({ schema: set.schema, applied: files }, 'migrations applied');
  }
  return applied;
}
