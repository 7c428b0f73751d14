import { RouteTable, createHttpApp, openApiDocumentRoute, type IdentitySigner, type LoreApp, type Logger, createRouter } from '@lore/runtime';
import type { Registry } from 'prom-client';
import type { AgentsDeps } from './application/context';
import { health } from './application/health';
import { agentsOpenApi, agentsResponses } from './openapi';
import { agentsGuard, familyOf, shapeError, type AgentsState } from './routes/route';
import { utilityRoutes, type UtilityRouteDeps } from './routes/utility/routes';
import { directoryRoutes, type DirectoryRouteDeps } from './routes/directory/routes';
import { searchRoutes, type SearchRouteDeps } from './routes/searches/routes';
import { streamRoutes, type StreamRouteDeps } from './routes/streams/routes';
import { continueSearch, savedLists, searchView, startEnrichment, startSearch, stopEnrichment, stopSearch } from './application/workflows';
import { activeStreams, streamStatus } from './application/streams';
import { searchDirectory } from './application/directory';
import { analyzeUpload, importStatus, restoreCsvList, reviewImport } from './application/csv-imports';
import { csvImportRoutes, type CsvImportRouteDeps } from './routes/csv-import/routes';
import { routePrompt, routerOf } from './application/service-routing';
import { companyOverview, companyOverviewHtml } from './application/company-overview';
import { serviceRoutingRoutes, type ServiceRoutingRouteDeps } from './routes/service-routing/routes';
import { companyRoutes, type CompanyRouteDeps } from './routes/company/routes';
import { workflowRoutes, type WorkflowRouteDeps } from './routes/workflow/routes';
import { seedRoutes, type SeedRouteDeps } from './routes/seed/routes';
import { continueGeneric, followWorkflow, genericView, removeCriterion, restoreGeneric, startGeneric, stopGeneric, streamable, streamGate, threadsOf } from './application/generic-workflows';
import { clearSeedStatuses, runSeed, seedStatuses } from './application/seed';
import { researchRoutes, type ResearchRouteDeps } from './routes/research/routes';
import { activeResearchOf, followResearch, researchStreamable, researchView, respondResearch, startResearch, stopResearch } from './application/research/research';
import { sessionRoutes, type SessionRouteDeps } from './routes/sessions/routes';
import { prepareSession, uploadForSession } from './application/sessions/service';
import { liveRoutes, type LiveRouteDeps } from './routes/live/routes';
import { followLive, livePagePath, openLiveSession } from './application/live-page';

export interface AgentsAppOptions {
  agents: AgentsDeps;
  signer: IdentitySigner;
  logger: Logger;
  metrics: Registry;
  /** Largest JSON body (bytes). */
  bodyLimitBytes: number;
  /** Check every success body against its declared schema (tests): a drift is a 500 naming it. */
  checkResponses?: boolean;
}

/** The largest reference file a deep search upload keeps (20 MiB). */
export const SESSION_UPLOAD_MAX_BYTES = 20 * 1024 * 1024;

/** The path of the agents service's own OpenAPI document, forwarded by the gateway without a credential. */
export const AGENTS_OPENAPI_PATH = '/api/agents/openapi.json';

/** What the agents route modules call, each module given only its own part. */
export interface AgentsRouteDeps {
  utility: UtilityRouteDeps;
  directory: DirectoryRouteDeps;
  csvImport: CsvImportRouteDeps;
  searches: SearchRouteDeps;
  streams: StreamRouteDeps;
  serviceRouting: ServiceRoutingRouteDeps;
  company: CompanyRouteDeps;
  workflow: WorkflowRouteDeps;
  seed: SeedRouteDeps;
  research: ResearchRouteDeps;
  sessions: SessionRouteDeps;
  live: LiveRouteDeps;
}

/** Binds the application layer and the identity guard to one agents service's dependencies, resource by resource. */
export function agentsRouteDeps(agents: AgentsDeps, signer: IdentitySigner): AgentsRouteDeps {
  return {
    utility: { facts: agents.facts, health: () => health(agents), docsPath: AGENTS_OPENAPI_PATH },
    directory: { guard: agentsGuard(signer), search: (p, kind, filter, page) => searchDirectory(agents.db, p.tenantId, kind, filter, page) },
    csvImport: {
      guard: agentsGuard(signer),
      maxBytes: () => agents.csvImport.maxBytes,
      admit: (p) => agents.csvImports.analyses.enter(p.tenantId),
      upload: (p, file, emit) => analyzeUpload(agents, p, file, emit),
      review: async (p, threadId, input) => {
        const reviewed = await reviewImport(agents, p, threadId, input);
        // The import runs in the background; a process that stops first leaves it to the sweep.
        if (reviewed.started) void agents.csvImports.run(p.tenantId, threadId);
        return reviewed;
      },
      status: (p, threadId) => importStatus(agents, p, threadId),
      restore: (p, listId, offset) => restoreCsvList(agents, p, listId, offset),
    },
    searches: {
      guard: agentsGuard(signer),
      start: (p, kind, input) => startSearch(agents, p, kind, input),
      continue: (p, kind, threadId, target) => continueSearch(agents, p, kind, threadId, target),
      stop: (p, kind, threadId) => stopSearch(agents, p, kind, threadId),
      view: (p, kinds, threadId) => searchView(agents, p, kinds, threadId),
      startEnrichment: (p, kind, threadId, input) => startEnrichment(agents, p, kind, threadId, input),
      stopEnrichment: (p, kind, threadId) => stopEnrichment(agents, p, kind, threadId),
      lists: (p, page) => savedLists(agents, p, page),
    },
    streams: { guard: agentsGuard(signer), active: (p) => activeStreams(agents, p), status: (p, key) => streamStatus(agents, p, key) },
    serviceRouting: { guard: agentsGuard(signer), route: (prompt) => routePrompt({ model: agents.languageModel, logger: agents.logger }, prompt), router: () => routerOf({ model: agents.languageModel }) },
    workflow: (() => {
      const gate = streamGate(agents);
      return {
        guard: agentsGuard(signer),
        start: (p, kind, input) => startGeneric(agents, p, kind, input),
        continue: (p, kind, input) => continueGeneric(agents, p, kind, input),
        view: (p, kind, threadId) => genericView(agents, p, kind, threadId),
        threads: (p, kind, page) => threadsOf(agents, p, kind, page),
        restore: (p, listId) => restoreGeneric(agents, p, listId),
        stop: (p, kind, threadId) => stopGeneric(agents, p, kind, threadId),
        removeCriterion: (p, kind, input) => removeCriterion(agents, p, kind, input),
        streamable: (p, threadId) => streamable(agents, p, threadId),
        follow: (tenantId, threadId, afterSeq, sink) => followWorkflow(agents, tenantId, threadId, afterSeq, sink),
        enterStream: (tenantId) => gate.enter(tenantId),
      } satisfies WorkflowRouteDeps;
    })(),
    seed: { guard: agentsGuard(signer), start: (p, type) => runSeed(agents, p, type), statuses: (p, type) => seedStatuses(agents, p, type), clear: (p, type, all) => clearSeedStatuses(agents, p, type, all) },
    research: (() => {
      const gate = streamGate(agents);
      return {
        guard: agentsGuard(signer),
        start: (p, input) => startResearch(agents, p, input),
        view: (p, threadId) => researchView(agents, p, threadId),
        active: (p) => activeResearchOf(agents, p),
        respond: (p, threadId, answer) => respondResearch(agents, p, threadId, answer),
        stop: (p, threadId) => stopResearch(agents, p, threadId),
        streamable: (p, threadId) => researchStreamable(agents, p, threadId),
        follow: (tenantId, threadId, afterSeq, sink) => followResearch(agents, tenantId, threadId, afterSeq, sink),
        enterStream: (tenantId) => gate.enter(tenantId),
      } satisfies ResearchRouteDeps;
    })(),
    sessions: {
      guard: agentsGuard(signer),
      prepare: (p, kind, input) => prepareSession(agents, p, kind, input),
      upload: (p, threadId, file) => uploadForSession(agents, p, threadId, file),
      // Lore has one configured model: every label the spec allows runs on it (docs/agents.md, "Sessions over websockets").
      modelOf: (label) => (label === null ? null : (agents.languageModel?.model ?? null)),
      maxUploadBytes: () => SESSION_UPLOAD_MAX_BYTES,
      version: () => agents.facts.version,
      egressCountries: () => agents.egress?.countries() ?? [],
      livePath: (p, threadId) => livePagePath(threadId, agents.liveTokens.issue(p.tenantId, threadId)),
    },
    live: (() => {
      const gate = streamGate(agents);
      return {
        open: (token, threadId) => openLiveSession(agents, agents.liveTokens, token, threadId),
        follow: (session, afterSeq, sink) => followLive(agents, session, afterSeq, sink),
        enterStream: (tenantId) => gate.enter(tenantId),
      } satisfies LiveRouteDeps;
    })(),
    company: { guard: agentsGuard(signer), overview: (input, signal) => companyOverview({ pages: agents.pages, logger: agents.logger }, input, signal), html: companyOverviewHtml },
  };
}

/** Every route the agents service serves, from the route modules, plus the document of exactly those routes. */
export function agentsRouteTable(deps: AgentsRouteDeps, options: { bodyLimitBytes: number; checkResponses?: boolean }): RouteTable<AgentsState> {
  const table = new RouteTable<AgentsState>({ bodyLimitBytes: options.bodyLimitBytes, checkResponses: options.checkResponses, commonResponses: agentsResponses });
  table.add(
    utilityRoutes(deps.utility),
    directoryRoutes(deps.directory),
    csvImportRoutes(deps.csvImport),
    searchRoutes(deps.searches),
    streamRoutes(deps.streams),
    serviceRoutingRoutes(deps.serviceRouting),
    companyRoutes(deps.company),
    workflowRoutes(deps.workflow),
    seedRoutes(deps.seed),
    researchRoutes(deps.research),
    sessionRoutes(deps.sessions),
    liveRoutes(deps.live),
    openApiDocumentRoute(AGENTS_OPENAPI_PATH, 'the OpenAPI 3.1 document of the agents routes', () => agentsOpenApi(table)),
  );
  return table;
}

/** Route dependencies that may be read but never called (documentation and the documentation test). */
export function inertRouteDeps(): AgentsRouteDeps {
  const never = (): never => {
    throw new Error('a route of the documentation-only table was called');
  };
  const inert: unknown = new Proxy(never, { get: () => inert, apply: () => inert });
  return inert as AgentsRouteDeps;
}

/** The document without a running service (the committed openapi.json and its test). */
export function documentedAgentsOpenApi(): Record<string, unknown> {
  return agentsOpenApi(agentsRouteTable(inertRouteDeps(), { bodyLimitBytes: 1 }));
}

/** The agents listener: the route table, then 404 for everything else. Each route reads its own body. */
export function createAgentsApp(options: AgentsAppOptions): LoreApp {
  // Faults (500), 404s no route answered and the kit's own refusals in the path's family, as every answer of the
  // routes (docs/agents.md, "Errors"): before, they came in the platform's envelope, which is neither.
  const app = createHttpApp({
    service: 'agents', logger: options.logger, metrics: options.metrics, bodyLimitBytes: options.bodyLimitBytes, parseBodies: false,
    errorShape: (err, path) => shapeError(familyOf(path), err),
  });
  const router = createRouter<AgentsState>();
  const table = agentsRouteTable(agentsRouteDeps(options.agents, options.signer), { bodyLimitBytes: options.bodyLimitBytes, checkResponses: options.checkResponses });
  table.mount(router);
  app.use(router.routes());
  // A known path with a method it does not declare: 405 with Allow (docs/fuzzing.md).
  app.use(table.methodNotAllowed());
  return app;
}
