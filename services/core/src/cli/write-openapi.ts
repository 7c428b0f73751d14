import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { documentedCoreOpenApi } from '../app';

/**
 * Regenerates services/core/openapi.json from the route table (openapi.test.ts fails while the committed copy
 * differs): `node --conditions=lore-src --import tsx services/core/src/cli/write-openapi.ts`.
 */
const target = join(__dirname, '..', '..', 'openapi.json');
writeFileSync(target, `${JSON.stringify(documentedCoreOpenApi(), null, 2)}\n`);
process.stdout.write('wrote services/core/openapi.json\n');
