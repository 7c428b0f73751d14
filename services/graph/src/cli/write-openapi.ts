import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApi } from '../openapi';

/** Regenerates services/graph/openapi.json (checked by openapi.test.ts). */
const target = join(__dirname, '..', '..', 'openapi.json');
writeFileSync(target, `${JSON.stringify(buildOpenApi(), null, 2)}\n`);
console.log(`wrote ${target}`);
