import { join } from 'node:path';
import { componentLogger, RUNTIME_MIGRATIONS, SecretBox, assertAppRole, checkAppRole, runMigrations, runRuntimeMigrations, type BlobStore, type Db, type EncryptionKey, type IdentitySigner, type KnowledgeSearch, type Lifecycle, type LoreApp, type Logger } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { createCoreApp } from './app';
import { connectorFileSettings } from './application/connector-files';
import type { CoreDeps } from './application/context';
import { ProjectFileRunner, projectFileSettings } from './application/project-files';
import { DEFAULT_FILE_READING } from './connectors/file-text';
import { ExtractiveLanguageModel, type LanguageModel } from '@lore/ai';
import { TargetGuard, type HostLookup } from '@lore/outbound';
import { createCoreIndexer, type CoreIndexer, type CoreIndexerDeps } from './indexer';
import { endAnsweringMarks } from './store/chat-messages';
import { PassageCache } from './application/passage-cache';

/** Core's schema: chat (personas, sessions, messages, feedback); connectors come with their own migrations. */
export const CORE_MIGRATIONS = { schema: 'core', dir: join(__dirname, '..', 'migrations') };
/** The schemas a core process works in: the application role needs what their migrations grant. */
const CORE_SCHEMAS = [RUNTIME_MIGRATIONS, CORE_MIGRATIONS];

export interface CoreServiceDeps {
  db: Db;
  logger: Logger;
  metrics: Registry;
  signer: IdentitySigner;
  /** The platform key ring (`LORE_ENCRYPTION_KEYS`): seals connector credentials; the first key seals, every key opens. */
  encryptionKeys: EncryptionKey[];
  /** Answers chat messages; default: the embedded extractive model. */
  languageModel?: LanguageModel;
  /** Where internal_search finds documents: the memory API (graph service). */
  knowledge: KnowledgeSearch;
  /** Most tokens a chat answer may take (default 800). */
  answerMaxTokens?: number;
  /** Run the migrations at start (embedded mode, development); a cluster runs them in the migrations Job. */
  migrate?: boolean;
  bodyLimitBytes?: number;
  checkResponses?: boolean;
  /** Registers the readiness check `core`. */
  lifecycle?: Lifecycle;
  /** The runtime's blob store: chat project files wait there until their text is extracted. */
  blobs: BlobStore;
  /**
   * What connector URLs may name (checked when a web connector is created): loopback only with
   * `LORE_CONNECTORS_ALLOW_LOOPBACK`; `lookup` resolves host names (tests: a loopback world's). Default: nothing local.
   */
  connectorTargets?: { allowLoopback: boolean; lookup?: HostLookup };
  /** Chat project file limits and extraction settings (docs/core.md, "Project files"); default: the documented ones. */
  projectFiles?: Parameters<typeof projectFileSettings>[0];
  /** Limits of the uploads for `file` connectors (docs/core.md, "Connector files"); default: the documented ones. */
  connectorFiles?: Parameters<typeof connectorFileSettings>[0];
  /**
   * The connector indexer's parts (the `core-worker` deployment and embedded mode): with them, `indexer` is made
   * (started by the caller). The API deployment has none: its routes only write attempts through the outbox.
   */
  indexer?: Omit<CoreIndexerDeps, 'db' | 'logger' | 'metrics' | 'signer' | 'secrets'>;
  /**
   * This process is the only one answering chat turns on its database (embedded mode): at start, every answering
   * mark is one a stopped process left, and they are all ended (docs/core.md, "Messages and answers"). A cluster's
   * core replicas leave a dead pod's marks to expire.
   */
  soleAnswerer?: boolean;
}

export interface CoreService {
  app: LoreApp;
  /** The composed dependencies, for in-process tools and tests. */
  core: CoreDeps;
  /** The connector indexer, when its parts were given (not started). */
  indexer: CoreIndexer | null;
  close(): Promise<void>;
}

/**
 * The core service composed from ports: the HTTP app (`/api/persona`, `/api/chat/*`, `/api/openapi.json`). The
 * same code runs as the `core` deployment and inside the embedded single process.
 */
export async function createCoreService(deps: CoreServiceDeps): Promise<CoreService> {
  const logger = componentLogger(deps.logger, 'core');
  if (deps.migrate !== false) {
    await runRuntimeMigrations(deps.db);
    await runMigrations(deps.db, CORE_MIGRATIONS);
  }
  // Refuse to start when the application role cannot do the work, or could escape row-level security.
  await assertAppRole(deps.db, CORE_SCHEMAS);
  if (deps.soleAnswerer) {
    const ended = await endAnsweringMarks(deps.db);
    if (ended > 0) logger.warn({ questions: ended }, 'ended the answering marks of turns a stopped process left unanswered');
  }
  const chat = { languageModel: deps.languageModel ?? new ExtractiveLanguageModel(), knowledge: deps.knowledge, answerMaxTokens: deps.answerMaxTokens ?? 800, maxDocuments: 10 };
  const settings = projectFileSettings(deps.projectFiles);
  // Every core process with the HTTP app extracts the project files it accepts, and takes over those of a stopped one.
  const runner = new ProjectFileRunner({ db: deps.db, blobs: deps.blobs, logger, settings, reading: { ...DEFAULT_FILE_READING, logger } });
  const core: CoreDeps = { db: deps.db, logger, seededTenants: new Set(), chat, secrets: new SecretBox(deps.encryptionKeys), blobs: deps.blobs, projectFiles: { settings, runner }, passages: new PassageCache(), connectorFiles: connectorFileSettings(deps.connectorFiles), targets: new TargetGuard({ allowLoopback: deps.connectorTargets?.allowLoopback ?? false, ...(deps.connectorTargets?.lookup ? { lookup: deps.connectorTargets.lookup } : {}) }) };
  deps.lifecycle?.addCheck('core', async () => {
    const { problems } = await checkAppRole(deps.db, CORE_SCHEMAS);
    return { ok: problems.length === 0, details: problems.length > 0 ? { problems } : {} };
  });
  const app = createCoreApp({ core, signer: deps.signer, logger, metrics: deps.metrics, bodyLimitBytes: deps.bodyLimitBytes ?? 1024 * 1024, checkResponses: deps.checkResponses });
  const indexer = deps.indexer ? createCoreIndexer({ ...deps.indexer, db: deps.db, logger, metrics: deps.metrics, signer: deps.signer, secrets: core.secrets }) : null;
  runner.start();
  return {
    app,
    core,
    indexer,
    close: async () => {
      await runner.close();
      await indexer?.stop();
    },
  };
}
