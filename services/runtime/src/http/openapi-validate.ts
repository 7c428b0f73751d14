import { execFile } from 'node:child_process';

export interface OpenApiValidation {
  valid: boolean;
  errors: unknown[];
}

// The validator is an ES module that reads its schemas relative to import.meta.url, which jest's CommonJS module
// sandbox cannot load; a short-lived node process imports it natively instead. Tests and the document writers use
// this; no service calls it while serving (the validator is a development dependency).
const SCRIPT = `
import { Validator } from '@seriousme/openapi-schema-validator';
let text = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) text += chunk;
const result = await new Validator().validate(JSON.parse(text));
process.stdout.write(JSON.stringify({ valid: result.valid, errors: result.valid ? [] : [].concat(result.errors ?? []) }));
`;

/** Checks a document against the official OpenAPI 3.x JSON Schema (3.1 for Lore's documents). */
export function validate(document: unknown): Promise<OpenApiValidation> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, ['--input-type=module', '-e', SCRIPT], { maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`OpenAPI validator failed: ${stderr || err.message}`));
      try {
        resolve(JSON.parse(stdout) as OpenApiValidation);
      } catch (parseErr) {
        reject(parseErr as Error);
      }
    });
    child.stdin!.end(JSON.stringify(document));
  });
}

export { validate as validateOpenApiDocument };
