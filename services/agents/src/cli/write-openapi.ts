import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { documentedAgentsOpenApi } from '../app';
import { AGENTS_VERSION } from '../agents-service';
import { sessionsAsyncApi } from '../routes/sessions/asyncapi';

/**
 * Regenerates services/agents/openapi.json from the route table (openapi.test.ts fails while the committed copy
 * differs): `node --conditions=lore-src --import tsx services/agents/src/cli/write-openapi.ts`.
 */
const target = join(__dirname, '..', '..', 'openapi.json');
writeFileSync(target, `${JSON.stringify(documentedAgentsOpenApi(), null, 2)}\n`);
process.stdout.write('wrote services/agents/openapi.json\n');
// The session sockets' AsyncAPI document beside it (asyncapi.test.ts checks the committed copy the same way).
writeFileSync(join(__dirname, '..', '..', 'asyncapi.json'), `${JSON.stringify(sessionsAsyncApi(AGENTS_VERSION), null, 2)}\n`);
process.stdout.write('wrote services/agents/asyncapi.json\n');
