export { createAgentsService, AGENTS_MIGRATIONS, AGENTS_VERSION, type AgentsService, type AgentsServiceDeps } from './agents-service';
export { agentsConfigSchema, type AgentsConfig } from './config';
export { documentedAgentsOpenApi, AGENTS_OPENAPI_PATH } from './app';
export { PostgresDirectory, searchDirectory, upsertDirectoryRecords, writeDirectoryRecords, type DirectoryInput, type DirectoryPage } from './application/directory';
export type { Directory, DirectoryDocument, DirectoryFilter, DirectoryKind, DirectoryRecord } from './sources/directory';
export { DEFAULT_CSV_IMPORT, type CsvImportSettings } from './application/csv-imports';
