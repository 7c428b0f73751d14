import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { documentedGatewayOpenApi } from './app';

/** Regenerates `services/gateway/openapi.json` (a unit test fails while the committed copy differs). */
const target = join(__dirname, '..', 'openapi.json');
writeFileSync(target, `${JSON.stringify(documentedGatewayOpenApi(), null, 2)}\n`);
process.stdout.write(`wrote ${target}\n`);
