import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@lore/runtime';
import { embeddedEnvSchema, startEmbedded, type Embedded } from '@lore/embedded';

export interface EmbeddedUnderTest {
  /** The running process (set in the suite's beforeAll). */
  readonly lore: Embedded;
  /** A JSON call with the development key. */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }>;
}

/**
 * Embedded mode as `npm start` composes it (`startEmbedded`: PGlite, the in-process bus, one relay) on a fresh data
 * directory, started before the suite's tests and stopped after them.
 */
export function useEmbedded(name: string, env: Record<string, string> = {}): EmbeddedUnderTest {
  const dataDir = mkdtempSync(join(tmpdir(), `lore-${name}-`));
  let lore: Embedded | undefined;
  beforeAll(async () => {
    const config = embeddedEnvSchema.parse({ PORT: '0', LORE_OPS_PORT: '0', LORE_DATA_DIR: dataDir, LORE_LOG_LEVEL: 'silent', LORE_OCR: 'false', ...env });
    lore = await startEmbedded(config, createLogger({ level: 'silent', service: name }));
  });
  afterAll(async () => {
    await lore?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const running = (): Embedded => {
    if (!lore) throw new Error('embedded mode is not started (call inside a test)');
    return lore;
  };
  return {
    get lore() {
      return running();
    },
    call: async (method, path, body) => {
      const l = running();
      const res = await fetch(`${l.url}${path}`, {
        method,
        headers: { 'x-api-key': l.credentials.api_key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, json: text ? JSON.parse(text) : null };
    },
  };
}
