export { createCoreService, CORE_MIGRATIONS, type CoreService, type CoreServiceDeps } from './core-service';
export { coreConfigSchema, coreFileEnv, coreIndexerEnv, connectorFileConfig, googleEndpointSetting, projectFileConfig, type CoreConfig, type CoreFileConfig } from './config';
export { documentedCoreOpenApi, CORE_OPENAPI_PATH } from './app';
export { DEFAULT_PERSONA_ID } from './domain/personas';
// The memory API's client lives in the runtime (the agents read the tenant's knowledge with it too).
export { GraphKnowledgeSearch, type KnowledgeSearch, type RetrievedChunk } from '@lore/runtime';
export { GraphConnectorDocuments, type ConnectorDocuments } from './clients/graph-documents';
export { createCoreIndexer, CORE_TOPICS, type CoreIndexer, type CoreIndexerDeps } from './indexer';
export { resealCredentials, startCredentialSealing } from './application/credential-sealing';
export type { SourceSettings } from './connectors/factory';
export type { IndexingSettings } from './application/indexing';
