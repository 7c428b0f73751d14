import { join } from 'node:path';
import { createLogger, exitOnConfigError, parseConfig } from '@lore/runtime';
import { embeddedEnvSchema } from './config';
import { startEmbedded } from './embedded';
import { readyBanner } from './banner';

/** `npm start`: the whole platform in one process. */
async function main(): Promise<void> {
  const config = parseConfig(embeddedEnvSchema, process.env);
  // Without a service: each service in the process binds its own (startEmbedded).
  const root = createLogger({ level: config.LORE_LOG_LEVEL });
  const logger = root.child({ service: 'lore-embedded' });
  const started = Date.now();
  // With LORE_EMBEDDER=auto and no model in the cache, the fetch script runs in the background with this
  // environment (PATH, HOME, pip's own settings).
  const lore = await startEmbedded(config, root, {
    modelFetch: { script: join(__dirname, '..', '..', '..', 'scripts', 'fetch-model.sh'), env: process.env },
  });
  lore.lifecycle.installSignalHandlers();
  const { embedder } = lore.parts.graph.describe();
  logger.info({ url: lore.url, ops: lore.opsUrl, admin: lore.adminUrl, tenant_id: lore.credentials.tenant_id, embedder, ms: Date.now() - started }, 'lore is ready');
  // Printed for the person at the terminal, never logged: new secrets once, on the start that made them.
  process.stdout.write(
    readyBanner({
      url: lore.url,
      adminUrl: lore.adminUrl,
      credentialsFile: lore.credentialsFile,
      credentials: lore.credentials,
      fresh: lore.freshSecrets,
      embedder: `${embedder.kind} ${embedder.model}${embedder.kind === 'hashed' && embedder.detail ? ` (${embedder.detail})` : ''}`,
    }),
  );
}

main().catch(exitOnConfigError);
