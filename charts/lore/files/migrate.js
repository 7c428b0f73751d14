// Applies the database migrations of every Lore service present in the image, as the schema owner, then exits.
// Run by the chart's migrations Job (a pre-install, pre-upgrade and pre-rollback hook) before any deployment starts,
// so no service needs the owner's credentials. Each set is applied under an advisory lock: concurrent runs are safe.
// A schema a newer Lore migrated is refused before anything is applied (NewerSchemaError): the script exits 1, which
// fails the hook and so stops a `helm rollback` to an older release before its pods would run on that schema.
'use strict';
const { createRequire } = require('node:module');

// The image keeps the application in /app; LORE_APP_DIR points elsewhere (the chart suite runs it from a checkout).
const fromApp = createRequire(`${process.env.LORE_APP_DIR || '/app'}/package.json`);

function optional(name) {
  try {
    return fromApp(name);
  } catch (err) {
    if (err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(name)) return undefined;
    throw err;
  }
}

async function main() {
  const runtime = fromApp('@lore/runtime');
  const log = runtime.createLogger({ level: process.env.LOG_LEVEL || 'info', service: 'migrations' });
  const url = process.env.LORE_DATABASE_URL;
  const ownerUrl = process.env.LORE_DATABASE_OWNER_URL;
  if (!url || !ownerUrl) throw new Error('LORE_DATABASE_URL and LORE_DATABASE_OWNER_URL are required');
  const db = await new runtime.PostgresDb({ url, ownerUrl, maxConnections: 2 }).init();
  try {
    // Order matters: the runtime's outbox first, then each service's schema.
    const sets = [['runtime', runtime.RUNTIME_MIGRATIONS]];
    const gateway = optional('@lore/gateway');
    if (gateway) sets.push(['gateway', { schema: 'gateway', dir: gateway.GATEWAY_MIGRATIONS_DIR }]);
    for (const pkg of ['@lore/graph', '@lore/core', '@lore/agents']) {
      const mod = optional(pkg);
      const key = Object.keys(mod || {}).find((k) => /_MIGRATIONS$/.test(k) && mod[k] && mod[k].schema);
      if (key) sets.push([pkg, mod[key]]);
    }
    for (const [name, set] of sets) {
      const applied = await runtime.runMigrations(db, set);
      log.info({ set: name, schema: set.schema, applied }, applied.length ? 'migrations applied' : 'schema up to date');
    }
    // The deployments refuse to start with an application role that lacks a privilege or could escape row-level
    // security (a superuser, BYPASSRLS); failing here stops the install or upgrade before they roll.
    const report = await runtime.checkAppRole(db, sets.map(([, set]) => set));
    if (report.problems.length > 0) {
      throw new Error(`the application role of LORE_DATABASE_URL cannot run Lore:\n${report.problems.map((p) => `  - ${p}`).join('\n')}\nsee docs/install.md`);
    }
  } finally {
    await db.close();
  }
}

main().catch((err) => {
  process.stderr.write(`migrations failed: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
