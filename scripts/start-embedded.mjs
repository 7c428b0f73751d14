#!/usr/bin/env node
// `npm start`: runs every Lore service in one process (embedded mode) straight from the TypeScript sources,
// so a fresh clone needs no build step. Telemetry is preloaded before any other module.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const child = spawn(
  process.execPath,
  [
    '--conditions=lore-src',
    '--import',
    'tsx',
    '--import',
    join(root, 'services/runtime/src/telemetry/register.ts'),
    join(root, 'services/embedded/src/main.ts'),
    ...process.argv.slice(2),
  ],
  { stdio: 'inherit', cwd: process.cwd(), env: process.env },
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
