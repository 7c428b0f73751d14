import { AppError, RouteTable, openApiDocumentRoute, createHttpApp, detailError, type IdentitySigner, type LoreApp, type Logger, createRouter } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { deleteConnectorDocuments, upsertConnectorDocuments } from './application/connector-documents';
import type { MemoryDeps } from './application/context';
import { entitiesOf, entityOf } from './application/entities';
import { graphChat } from './application/graph-chat';
import { changeVault, contradictionsOf, createVault, documentOf, documentsOf, fileIntoVault, health, removeDocument, removeVault, resolve, vaultOf, vaultsOf } from './application/governance';
import { acceptDocument } from './application/ingest';
import { GRAPH_LIMITS, acceptConnectorJob, acceptGenerateJob, acceptUploadJob, createGraph, deleteGraph, graphOf, graphsOf, jobOf } from './application/knowledge-graphs';
import { answerStream, retrieve, search } from './application/search';
import { acceptUpload, getUploadView } from './application/uploads';
import { graphOpenApi, graphResponses } from './openapi';
import { connectorDocumentRoutes, type ConnectorDocumentRouteDeps } from './routes/connector-documents/routes';
import { contradictionRoutes, type ContradictionRouteDeps } from './routes/contradictions/routes';
import { documentRoutes, type DocumentRouteDeps } from './routes/documents/routes';
import { entityRoutes, type EntityRouteDeps } from './routes/entities/routes';
import { healthRoutes, type HealthRouteDeps } from './routes/health/routes';
import { ingestRoutes, type IngestRouteDeps } from './routes/ingest/routes';
import { graphChatRoutes, type GraphChatRouteDeps } from './routes/graph-chat/routes';
import { knowledgeGraphRoutes, type KnowledgeGraphRouteDeps } from './routes/knowledge-graphs/routes';
import { reviewRoutes, type ReviewRouteDeps } from './routes/review/routes';
import { connectorGuard, memoryGuard, tenantGuard, type GraphState } from './routes/route';
import { searchRoutes, type SearchRouteDeps } from './routes/search/routes';
import { uploadRoutes, type UploadRouteDeps } from './routes/uploads/routes';
import { vaultRoutes, type VaultRouteDeps } from './routes/vaults/routes';

export { MEMORY_PREFIX } from './routes/route';

export interface GraphAppOptions {
  memory: MemoryDeps;
  signer: IdentitySigner;
  logger: Logger;
  metrics: Registry;
  /** Largest JSON body (bytes); uploads have their own limit (`memory.config.uploadMaxBytes`). */
  bodyLimitBytes: number;
  /** Check every success body against its declared schema (tests): a drift is a 500 naming it. */
  checkResponses?: boolean;
}

/** What the memory route modules call, each module given only its own part. */
export interface GraphRouteDeps {
  ingest: IngestRouteDeps;
  search: SearchRouteDeps;
  vaults: VaultRouteDeps;
  documents: DocumentRouteDeps;
  review: ReviewRouteDeps;
  contradictions: ContradictionRouteDeps;
  health: HealthRouteDeps;
  uploads: UploadRouteDeps;
  connectorDocuments: ConnectorDocumentRouteDeps;
  entities: EntityRouteDeps;
  knowledgeGraphs: KnowledgeGraphRouteDeps;
  graphChat: GraphChatRouteDeps;
}

/** Binds the application layer and the identity guard to one graph's dependencies, resource by resource. */
export function graphRouteDeps(memory: MemoryDeps, signer: IdentitySigner): GraphRouteDeps {
  const guard = memoryGuard(signer);
  return {
    ingest: {
      guard,
      ingest: async (scope, input) => {
        const result = await acceptDocument(memory, scope, input, { source: 'ingest' });
        // Only an upload's `before` step can abandon an ingest; a request has none.
        if (!result) throw new AppError('INTERNAL', 'the ingest was abandoned');
        return result;
      },
    },
    search: {
      guard,
      search: {
        answer: (scope, query, options) => search(memory, scope, query, options),
        retrieve: (scope, query, options) => retrieve(memory, scope, query, options),
        stream: (query, retrieval, signal) => answerStream(memory, query, retrieval.sources, signal),
        observe: (mode, seconds) => memory.metrics.searchDuration.observe({ mode, stream: 'true' }, seconds),
      },
    },
    vaults: {
      guard,
      vaults: {
        list: (scope) => vaultsOf(memory, scope),
        get: (scope, id) => vaultOf(memory, scope, id),
        create: (scope, input) => createVault(memory, scope, input),
        change: (scope, id, patch) => changeVault(memory, scope, id, patch),
        remove: (scope, id) => removeVault(memory, scope, id),
      },
    },
    documents: {
      guard,
      documents: { get: (scope, id) => documentOf(memory, scope, id), list: (scope, filter) => documentsOf(memory, scope, filter), remove: (scope, id) => removeDocument(memory, scope, id) },
    },
    review: {
      guard,
      review: { list: (scope, filter) => documentsOf(memory, scope, filter), file: (scope, docId, vaultId) => fileIntoVault(memory, scope, docId, vaultId) },
    },
    contradictions: {
      guard,
      contradictions: {
        list: (scope, status, limit) => contradictionsOf(memory, scope, status, limit),
        resolve: (scope, id, resolution, note) => resolve(memory, scope, id, resolution, note),
      },
    },
    health: { guard, health: (scope, publish) => health(memory, scope, publish) },
    uploads: {
      guard,
      uploads: { maxBytes: memory.config.uploadMaxBytes, accept: (scope, file) => acceptUpload(memory, scope, file), get: (scope, id) => getUploadView(memory, scope, id) },
    },
    connectorDocuments: {
      guard: connectorGuard(signer),
      connectorDocuments: {
        bodyLimitBytes: memory.config.connectorBodyLimitBytes,
        upsert: (scope, batch) => upsertConnectorDocuments(memory, scope, batch),
        remove: (scope, ccPairId, ids) => deleteConnectorDocuments(memory, scope, ccPairId, ids),
      },
    },
    entities: { guard, entities: { list: (scope, filter) => entitiesOf(memory, scope, filter), get: (scope, id) => entityOf(memory, scope, id) } },
    graphChat: { guard: tenantGuard(signer), chat: (viewer, input, signal) => graphChat(memory, viewer, input, signal) },
    knowledgeGraphs: {
      guard: tenantGuard(signer),
      graphs: {
        uploadMaxBytes: GRAPH_LIMITS.uploadMaxBytes,
        generateBodyBytes: GRAPH_LIMITS.generateBodyBytes,
        list: (viewer) => graphsOf(memory, viewer),
        get: (viewer, graphId) => graphOf(memory, viewer, graphId),
        create: (tenantId, input) => createGraph(memory, tenantId, input),
        remove: (viewer, graphId) => deleteGraph(memory, viewer, graphId),
        upload: (viewer, listId, file) => acceptUploadJob(memory, viewer, listId, file),
        ingestConnectors: (viewer, input) => acceptConnectorJob(memory, viewer, input),
        generate: (viewer, input) => acceptGenerateJob(memory, viewer, input),
        job: (viewer, jobId) => jobOf(memory, viewer, jobId),
      },
    },
  };
}

/**
 * Every route the graph serves, from the route modules, plus the document of exactly those routes at
 * `GET /openapi.json` (spec 2's `{memory_url}/openapi.json`; no credential: it describes the API and holds nothing
 * of a tenant's, and the gateway forwards it as an open path).
 */
export function graphRouteTable(deps: GraphRouteDeps, options: { bodyLimitBytes: number; checkResponses?: boolean }): RouteTable<GraphState> {
  const table = new RouteTable<GraphState>({ bodyLimitBytes: options.bodyLimitBytes, checkResponses: options.checkResponses, commonResponses: graphResponses });
  table.add(
    ingestRoutes(deps.ingest),
    searchRoutes(deps.search),
    vaultRoutes(deps.vaults),
    documentRoutes(deps.documents),
    reviewRoutes(deps.review),
    contradictionRoutes(deps.contradictions),
    healthRoutes(deps.health),
    uploadRoutes(deps.uploads),
    connectorDocumentRoutes(deps.connectorDocuments),
    entityRoutes(deps.entities),
    knowledgeGraphRoutes(deps.knowledgeGraphs),
    graphChatRoutes(deps.graphChat),
    openApiDocumentRoute('/openapi.json', 'the OpenAPI 3.1 document of the memory routes and the graph-internal ones (tag `internal`)', () => graphOpenApi(table)),
  );
  return table;
}

/**
 * The document without a running graph (the committed openapi.json and its test): the same route modules with
 * dependencies that are never called, since documenting a route only reads its declaration.
 */
export function documentedGraphOpenApi(): Record<string, unknown> {
  return graphOpenApi(graphRouteTable(inertRouteDeps(), { bodyLimitBytes: 1 }));
}

/** Route dependencies that may be read but never called (documentation and the documentation test). */
export function inertRouteDeps(): GraphRouteDeps {
  const never = (): never => {
    throw new Error('a route of the documentation-only table was called');
  };
  const inert: unknown = new Proxy(never, { get: () => inert, apply: () => inert });
  return inert as GraphRouteDeps;
}

/** Spec 2's knowledge-graph paths (`/memory`, `/memory/...`), whose every refusal is `{detail}`. */
export const isSpec2Path = (path: string): boolean => path === '/memory' || path.startsWith('/memory/');

/**
 * An error no route shaped (a path no route answers: 404; a method its path does not declare: 405; a fault: 500) in
 * its path's family: spec 2's `{detail}` under `/memory/*`, as every other answer there and as core answers its own
 * paths; the platform envelope elsewhere (spec 1's `/api/v1/memory/*`, the internal routes). Before 2026-11-30 the
 * 404 and 405 of `/memory/*` came in the envelope, which neither the docs nor the served document declared.
 */
export function shapeGraphError(err: AppError, path: string): AppError {
  return isSpec2Path(path) ? detailError(err) : err;
}

/** The graph's listener: the route table, then 404 for everything else. JSON bodies are read by each route. */
export function createGraphApp(options: GraphAppOptions): LoreApp {
  // No body parser: every route reads its own body through the runtime's one reader (uploads stream theirs).
  const app = createHttpApp({
    service: 'graph', logger: options.logger, metrics: options.metrics, bodyLimitBytes: options.bodyLimitBytes, parseBodies: false,
    errorShape: shapeGraphError,
  });
  const router = createRouter<GraphState>();
  const table = graphRouteTable(graphRouteDeps(options.memory, options.signer), { bodyLimitBytes: options.bodyLimitBytes, checkResponses: options.checkResponses });
  table.mount(router);
  app.use(router.routes());
  // A known path with a method it does not declare: 405 with Allow (docs/fuzzing.md).
  app.use(table.methodNotAllowed());
  return app;
}
