import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { documentedAgentsOpenApi } from '../app';

/**
 * Regenerates services/agents/openapi.json from the route table (openapi.test.ts fails while the committed copy
 * differs): `node --conditions=lore-src --import tsx services/agents/src/cli/write-openapi.ts`.
 */
const target = join(__dirname, '..', '..', 'openapi.json');
writeFileSync(target, `${JSON.stringify(documentedAgentsOpenApi(), null, 2)}\n`);
process.stdout.write('wrote services/agents/openapi.json\n');
