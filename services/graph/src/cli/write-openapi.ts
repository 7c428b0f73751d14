import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { documentedGraphOpenApi } from '../app';

/**
 * Regenerates services/graph/openapi.json from the route table (openapi.test.ts fails while the committed copy
 * differs): `node --conditions=lore-src --import tsx services/graph/src/cli/write-openapi.ts`.
 */
const target = join(__dirname, '..', '..', 'openapi.json');
writeFileSync(target, `${JSON.stringify(documentedGraphOpenApi(), null, 2)}\n`);
process.stdout.write('wrote services/graph/openapi.json\n');
