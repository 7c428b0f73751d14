export { createCoreService, CORE_MIGRATIONS, type CoreService, type CoreServiceDeps } from './core-service';
export { coreConfigSchema, type CoreConfig } from './config';
export { documentedCoreOpenApi, CORE_OPENAPI_PATH } from './app';
export { DEFAULT_PERSONA_ID } from './domain/personas';
export { GraphKnowledgeSearch, type KnowledgeSearch, type RetrievedChunk } from './clients/knowledge';
export { GraphConnectorDocuments, type ConnectorDocuments } from './clients/graph-documents';
export { createCoreIndexer, CORE_TOPICS, type CoreIndexer, type CoreIndexerDeps } from './indexer';
export type { SourceSettings } from './connectors/factory';
export type { IndexingSettings } from './application/indexing';
