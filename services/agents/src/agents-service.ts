import { join } from 'node:path';
import { componentLogger, MemoryProgressStreams, PostgresBlobStore, RUNTIME_MIGRATIONS, type BlobStore, assertAppRole, type ProgressStreams, checkAppRole, runMigrations, runRuntimeMigrations, type Db, type IdentitySigner, type Lifecycle, type LoreApp, type Logger } from '@lore/runtime';
import type { LanguageModel } from '@lore/ai';
import type { Registry } from 'prom-client';
import { createPageReader, type WebTargets } from './sources/web-pages';
import { EgressReaders } from './sources/egress';
import type { EgressProxies } from './domain/egress';
import { LiveTokens } from './application/live-page';
import { createAgentsApp } from './app';
import { createWorkflowMetrics } from './application/workflow-metrics';
import type { AgentsDeps, ServiceFacts } from './application/context';
import { CsvImporter, DEFAULT_CSV_IMPORT, type CsvImportSettings } from './application/csv-imports';
import type { GenericWorkflowSettings } from './application/generic-workflows';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { sessionSockets, type SessionSocketLimits } from './routes/sessions/socket';
import { answerSession, connectSession, findSession, stopSession } from './application/sessions/service';
import { followSession } from './application/sessions/messages';

/** The agents schema: workflows, their event logs and lists, the directory, imports and seed runs. */
export const AGENTS_MIGRATIONS = { schema: 'agents', dir: join(__dirname, '..', 'migrations') };
/** The schemas an agents process works in: the application role needs what their migrations grant. */
const AGENTS_SCHEMAS = [RUNTIME_MIGRATIONS, AGENTS_MIGRATIONS];

export interface AgentsServiceDeps {
  db: Db;
  logger: Logger;
  metrics: Registry;
  signer: IdentitySigner;
  /** Version and environment the utility routes report (default: the package's version, `development`). */
  facts?: Partial<ServiceFacts>;
  /** Run the migrations at start (embedded mode, development); a cluster runs them in the migrations Job. */
  migrate?: boolean;
  bodyLimitBytes?: number;
  checkResponses?: boolean;
  /** Registers the readiness check `agents`. */
  lifecycle?: Lifecycle;
  /** Where uploads are kept (default: runtime.blobs in the service's database). */
  blobs?: BlobStore;
  /** The CSV import's limits (LORE_AGENTS_CSV_MAX_BYTES, _MAX_COLUMNS, _MAX_ROWS) and timing; defaults: 50 MiB, 200, 200,000. */
  csvImport?: Partial<CsvImportSettings>;
  /** Live progress streams of workflows (default: in memory, as embedded mode runs them). */
  streams?: ProgressStreams;
  /** Which web addresses page reads may reach (default: public ones only; `allowLoopback` for local testing). */
  webTargets?: WebTargets;
  /** Egress proxies by country (LORE_AGENTS_EGRESS_PROXIES; docs/agents.md, "Egress proxies"); none by default. */
  egressProxies?: EgressProxies;
  /**
   * Signs deep search's live_url tokens (docs/agents.md, "Live session page"): a cluster's API replicas share one
   * key (from LORE_IDENTITY_SECRET); one process alone may leave it to a random key.
   */
  liveTokens?: LiveTokens;
  /** A configured language model (service routing); without one the rules decide. */
  languageModel?: LanguageModel;
  /** The generic workflow API's limits (LORE_AGENTS_WORKFLOW_MAX_PER_SERVICE; docs/agents.md, "Generic workflow API"). */
  genericWorkflows?: Partial<GenericWorkflowSettings>;
  /** The session sockets' limits (docs/agents.md, "Sessions over websockets"). */
  socketLimits?: Partial<SessionSocketLimits>;
}

export interface AgentsService {
  app: LoreApp;
  /** Upgrades the session sockets: the listener's `upgrade` event (the agents deployment and embedded mode). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** The composed dependencies, for in-process tools and tests. */
  agents: AgentsDeps;
  close(): Promise<void>;
}

/** The version every agents process reports (spec 3's interface version). */
export const AGENTS_VERSION = '1.0.0';

/**
 * The agents service composed from ports. The same code runs as the `agents` deployment and inside the embedded
 * single process.
 */
export async function createAgentsService(deps: AgentsServiceDeps): Promise<AgentsService> {
  const logger = componentLogger(deps.logger, 'agents');
  if (deps.migrate !== false) {
    await runRuntimeMigrations(deps.db);
    await runMigrations(deps.db, AGENTS_MIGRATIONS);
  }
  // Refuse to start when the application role cannot do the work, or could escape row-level security.
  await assertAppRole(deps.db, AGENTS_SCHEMAS);
  const blobs = deps.blobs ?? new PostgresBlobStore(deps.db);
  const csvImport: CsvImportSettings = { ...DEFAULT_CSV_IMPORT, ...deps.csvImport };
  const csvImports = new CsvImporter({ db: deps.db, blobs, logger, csvImport });
  const agents: AgentsDeps = {
    db: deps.db,
    logger,
    blobs,
    csvImport,
    csvImports,
    facts: { version: deps.facts?.version ?? AGENTS_VERSION, environment: deps.facts?.environment ?? 'development' },
    streams: deps.streams ?? new MemoryProgressStreams(),
    workflowMetrics: createWorkflowMetrics(deps.metrics),
    pages: createPageReader(deps.webTargets ?? { allowLoopback: false }),
    ...(deps.egressProxies && Object.keys(deps.egressProxies).length > 0 ? { egress: new EgressReaders(deps.egressProxies, deps.webTargets ?? { allowLoopback: false }) } : {}),
    liveTokens: deps.liveTokens ?? new LiveTokens(),
    ...(deps.languageModel ? { languageModel: deps.languageModel } : {}),
    ...(deps.genericWorkflows ? { genericWorkflows: deps.genericWorkflows } : {}),
  };
  deps.lifecycle?.addCheck('agents', async () => {
    const { problems } = await checkAppRole(deps.db, AGENTS_SCHEMAS);
    return { ok: problems.length === 0, details: problems.length > 0 ? { problems } : {} };
  });
  const app = createAgentsApp({ agents, signer: deps.signer, logger, metrics: deps.metrics, bodyLimitBytes: deps.bodyLimitBytes ?? 1024 * 1024, checkResponses: deps.checkResponses });
  const sockets = sessionSockets({
    signer: deps.signer,
    logger,
    metrics: deps.metrics,
    ...(deps.socketLimits ? { limits: deps.socketLimits } : {}),
    find: (p, kind, threadId) => findSession(agents, p, kind, threadId),
    connect: (p, kind, threadId) => connectSession(agents, p, kind, threadId),
    follow: (tenantId, threadId, listId, afterSeq, send, signal, start) => followSession(agents, tenantId, threadId, listId, afterSeq, send, signal, start),
    answer: (p, kind, threadId, listId, prompt) => answerSession(agents, p, kind, threadId, listId, prompt),
    stop: (p, kind, threadId) => stopSession(agents, p, kind, threadId),
  });
  // Imports a stopped process left are resumed now and by the sweep's timer.
  csvImports.start();
  return {
    app,
    agents,
    handleUpgrade: sockets.handleUpgrade,
    close: async () => {
      sockets.close();
      await csvImports.stop();
      await agents.pages.close();
      agents.egress?.close();
    },
  };
}
