import { createLogger, exitOnConfigError, parseConfig } from '@lore/runtime';
import { embeddedEnvSchema } from './config';
import { startEmbedded } from './embedded';

/** `npm start`: the whole platform in one process. */
async function main(): Promise<void> {
  const config = parseConfig(embeddedEnvSchema, process.env);
  const logger = createLogger({ level: config.LORE_LOG_LEVEL, service: 'lore-embedded' });
  const started = Date.now();
  const lore = await startEmbedded(config, logger);
  lore.lifecycle.installSignalHandlers();
  const { embedder } = lore.parts.graph.describe();
  logger.info({ url: lore.url, ops: lore.opsUrl, tenant_id: lore.credentials.tenant_id, embedder, ms: Date.now() - started }, 'lore is ready');
  // Printed for the person at the terminal (the key is theirs, in their own data directory).
  process.stdout.write(
    `\nLore is ready on ${lore.url}\n` +
      `  tenant:  ${lore.credentials.tenant_id}\n` +
      `  api key: ${lore.credentials.api_key}${lore.createdCredentials ? '  (new; saved in dev-credentials.json)' : '  (from dev-credentials.json)'}\n` +
      `  memory embedder: ${embedder.kind} ${embedder.model}${embedder.kind === 'hashed' && embedder.detail ? ` (${embedder.detail})` : ''}\n` +
      `  try:     curl -H "x-api-key: ${lore.credentials.api_key}" ${lore.url}/api/v1/pages/ping\n\n`,
  );
}

main().catch(exitOnConfigError);
