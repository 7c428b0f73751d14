import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Drivers of the runtime's adapters that a process without a database, cache or bus must not load. */
export const HEAVY_PACKAGES = ['@electric-sql/pglite', 'kafkajs', 'ioredis', 'pg'] as const;

/**
 * Runs `node <nodeArgs> <entry>` in a child process (empty environment but PATH, so a composition root stops at
 * its configuration check) and returns every module file it had loaded when it exited.
 */
export function modulesLoadedBy(entry: string, nodeArgs: string[] = [], cwd = process.cwd()): { files: string[]; status: number | null } {
  const dir = mkdtempSync(join(tmpdir(), 'lore-modules-'));
  try {
    const hook = join(dir, 'hook.cjs');
    const out = join(dir, 'modules.json');
    writeFileSync(hook, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(Object.keys(require.cache))));\n`);
    const r = spawnSync(process.execPath, [...nodeArgs, '--require', hook, entry], { cwd, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8', timeout: 60_000 });
    return { files: JSON.parse(readFileSync(out, 'utf8')) as string[], status: r.status };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The heavy packages among loaded module files (by their node_modules folder). */
export function heavyPackagesIn(files: string[]): string[] {
  const found = new Set<string>();
  for (const f of files) {
    for (const p of HEAVY_PACKAGES) if (f.includes(`/node_modules/${p}/`)) found.add(p);
  }
  return [...found].sort();
}
