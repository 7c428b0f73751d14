import type { LanguageModel } from '@lore/ai';
import type { BlobStore, Db, Logger, ProgressStreams } from '@lore/runtime';
import type { CsvImporter, CsvImportSettings } from './csv-imports';
import type { PageReader } from '../sources/web-pages';
import type { WorkflowMetrics } from './workflow-metrics';
import type { GenericWorkflowSettings } from './generic-workflows';
import type { EgressReaders } from '../sources/egress';
import type { LiveTokens } from './live-page';

/** Facts about the running service that the utility routes report. */
export interface ServiceFacts {
  version: string;
  /** `NODE_ENV` of the process (`development`, `production`, ...). */
  environment: string;
}

/** What the agents application layer works with; route modules never see it, only the functions bound to it. */
export interface AgentsDeps {
  db: Db;
  logger: Logger;
  facts: ServiceFacts;
  /** Stored files: every CSV upload is kept here (runtime.blobs by default). */
  blobs: BlobStore;
  /** The CSV import's limits and timing. */
  csvImport: CsvImportSettings;
  /** Runs CSV imports, and resumes those a stopped process left (its sweep). */
  csvImports: CsvImporter;
  /** Live progress of workflows (Redis Streams, or memory in embedded mode); the event log is the durable copy. */
  streams: ProgressStreams;
  workflowMetrics?: WorkflowMetrics;
  /** Guarded, robots-honouring reads of web pages (company overview). */
  pages: PageReader;
  /** Page readers through the operator's egress proxies by country (LORE_AGENTS_EGRESS_PROXIES), if any are configured. */
  egress?: EgressReaders;
  /** Signs and checks the tokens of deep search's live pages. */
  liveTokens: LiveTokens;
  /** The configured language model, if any (service routing asks it; without one the rule decides). */
  languageModel?: LanguageModel;
  /** The generic workflow API's limits (per-serviceId running workflows, open streams); defaults in generic-workflows.ts. */
  genericWorkflows?: Partial<GenericWorkflowSettings>;
}
