import { AppError, RouteTable, createHttpApp, detailError, openApiDocumentRoute, type IdentitySigner, type LoreApp, type Logger, createRouter } from '@lore/runtime';
import type { Registry } from 'prom-client';
import { answerTurn, availableTokens, completeTurn, giveFeedback, maxSelectedDocumentTokens, prepareTurn, removeFeedback, seedSession, setMessageAsLatest } from './application/chat-messages';
import { changeProject, createProject, projectOf, projectsOf, removeProject } from './application/chat-projects';
import { projectFileOf, projectFilesOf, removeProjectFile, uploadProjectFiles } from './application/project-files';
import { tooManyFiles } from './application/uploads';
import { changeSession, createSession, deleteAllSessions, deleteSession, sessionDetail, sessionsOf } from './application/chat-sessions';
import { uploadConnectorFiles } from './application/connector-files';
import { associateCredential, ccPairInfo, ccPairStatuses, changeCcPairStatus, createConnector, createDeletionAttempt, indexAttempts, runOnce } from './application/connectors';
import type { CoreDeps } from './application/context';
import { coreError } from './application/errors';
import { createCredential, credentialList, credentialOf, removeCredential } from './application/credentials';
import { changePersona, createPersona, personaList, personaOf, removePersona } from './application/personas';
import { coreOpenApi, coreResponses } from './openapi';
import { chatMessageRoutes, type ChatMessageRouteDeps } from './routes/chat-messages/routes';
import { chatProjectRoutes, type ChatProjectRouteDeps } from './routes/chat-projects/routes';
import { chatSessionRoutes, type ChatSessionRouteDeps } from './routes/chat-sessions/routes';
import { connectorFileRoutes, type ConnectorFileRouteDeps } from './routes/connector-files/routes';
import { connectorRoutes, type ConnectorRouteDeps } from './routes/connectors/routes';
import { credentialRoutes, type CredentialRouteDeps } from './routes/credentials/routes';
import { personaRoutes, type PersonaRouteDeps } from './routes/personas/routes';
import { projectFileRoutes, type ProjectFileRouteDeps } from './routes/project-files/routes';
import { CORE_PREFIX, coreGuard, type CoreState } from './routes/route';

export interface CoreAppOptions {
  core: CoreDeps;
  signer: IdentitySigner;
  logger: Logger;
  metrics: Registry;
  /** Largest JSON body (bytes). */
  bodyLimitBytes: number;
  /** Check every success body against its declared schema (tests): a drift is a 500 naming it. */
  checkResponses?: boolean;
}

/** What the core route modules call, each module given only its own part. */
export interface CoreRouteDeps {
  personas: PersonaRouteDeps;
  sessions: ChatSessionRouteDeps;
  messages: ChatMessageRouteDeps;
  projects: ChatProjectRouteDeps;
  projectFiles: ProjectFileRouteDeps;
  connectors: ConnectorRouteDeps;
  connectorFiles: ConnectorFileRouteDeps;
  credentials: CredentialRouteDeps;
}

/** Binds the application layer and the identity guard to one core's dependencies, resource by resource. */
export function coreRouteDeps(core: CoreDeps, signer: IdentitySigner): CoreRouteDeps {
  const guard = coreGuard(signer);
  return {
    personas: {
      guard,
      personas: {
        list: (p) => personaList(core, p),
        get: (p, id) => personaOf(core, p, id),
        create: (p, input) => createPersona(core, p, input),
        change: (p, id, patch) => changePersona(core, p, id, patch),
        remove: (p, id) => removePersona(core, p, id),
      },
    },
    sessions: {
      guard,
      sessions: {
        create: (p, input) => createSession(core, p, input),
        list: (p, filter) => sessionsOf(core, p, filter),
        detail: (p, id, opts) => sessionDetail(core, p, id, opts),
        change: (p, id, patch) => changeSession(core, p, id, patch),
        remove: (p, id, hard) => deleteSession(core, p, id, hard),
        removeAll: (p) => deleteAllSessions(core, p),
      },
    },
    messages: {
      guard,
      messages: {
        prepare: (p, token, input) => prepareTurn(core, p, token, input),
        stream: (turn, signal) => answerTurn(core, turn, signal),
        complete: (turn, signal) => completeTurn(core, turn, signal),
        setLatest: (p, id) => setMessageAsLatest(core, p, id),
        feedback: (p, f) => giveFeedback(core, p, f),
        removeFeedback: (p, id) => removeFeedback(core, p, id),
        maxDocumentTokens: (p, personaId) => maxSelectedDocumentTokens(core, p, personaId),
        availableTokens: (p, id) => availableTokens(core, p, id),
        seed: (p, input) => seedSession(core, p, input),
      },
    },
    projects: {
      guard,
      projects: {
        create: (p, input) => createProject(core, p, input),
        list: (p) => projectsOf(core, p),
        get: (p, id) => projectOf(core, p, id),
        change: (p, id, patch) => changeProject(core, p, id, patch),
        remove: (p, id) => removeProject(core, p, id),
      },
    },
    projectFiles: {
      guard,
      files: {
        limits: core.projectFiles.settings.limits,
        upload: (p, projectId, parts) => uploadProjectFiles(core, p, projectId, parts),
        list: (p, projectId, fileIds) => projectFilesOf(core, p, projectId, fileIds),
        get: (p, projectId, fileId) => projectFileOf(core, p, projectId, fileId),
        remove: (p, projectId, fileId) => removeProjectFile(core, p, projectId, fileId),
        tooMany: tooManyFiles,
      },
    },
    connectors: {
      guard,
      connectors: {
        create: (p, input) => createConnector(core, p, input),
        statuses: (p, credentialId) => ccPairStatuses(core, p, credentialId),
        ccPair: (p, id) => ccPairInfo(core, p, id),
        associate: (p, connectorId, credentialId, input) => associateCredential(core, p, connectorId, credentialId, input),
        setStatus: (p, id, status) => changeCcPairStatus(core, p, id, status),
        deletePair: (p, connectorId, credentialId) => createDeletionAttempt(core, p, connectorId, credentialId),
        runOnce: (p, connectorId, credentialIds, fromBeginning) => runOnce(core, p, connectorId, credentialIds, fromBeginning),
        attempts: (p, id, limit) => indexAttempts(core, p, id, limit),
      },
    },
    connectorFiles: {
      guard,
      files: {
        limits: core.connectorFiles.limits,
        upload: (p, parts) => uploadConnectorFiles(core, p, parts),
        tooMany: tooManyFiles,
      },
    },
    credentials: {
      guard,
      credentials: {
        create: (p, input) => createCredential(core, p, input),
        list: (p) => credentialList(core, p),
        get: (p, id) => credentialOf(core, p, id),
        remove: (p, id) => removeCredential(core, p, id),
      },
    },
  };
}

/** The path of core's own OpenAPI document, forwarded by the gateway without a credential. */
export const CORE_OPENAPI_PATH = `${CORE_PREFIX}/openapi.json`;

/** Every route core serves, from the route modules, plus the document of exactly those routes. */
export function coreRouteTable(deps: CoreRouteDeps, options: { bodyLimitBytes: number; checkResponses?: boolean }): RouteTable<CoreState> {
  const table = new RouteTable<CoreState>({ bodyLimitBytes: options.bodyLimitBytes, checkResponses: options.checkResponses, commonResponses: coreResponses });
  table.add(
    personaRoutes(deps.personas),
    chatSessionRoutes(deps.sessions),
    chatMessageRoutes(deps.messages),
    chatProjectRoutes(deps.projects),
    projectFileRoutes(deps.projectFiles),
    connectorRoutes(deps.connectors),
    connectorFileRoutes(deps.connectorFiles),
    credentialRoutes(deps.credentials),
    openApiDocumentRoute(CORE_OPENAPI_PATH, 'the OpenAPI 3.1 document of the core routes', () => coreOpenApi(table)),
  );
  return table;
}

/** Route dependencies that may be read but never called (documentation and the documentation test). */
export function inertRouteDeps(): CoreRouteDeps {
  const never = (): never => {
    throw new Error('a route of the documentation-only table was called');
  };
  const inert: unknown = new Proxy(never, { get: () => inert, apply: () => inert });
  return inert as CoreRouteDeps;
}

/** The document without a running core (the committed openapi.json and its test). */
export function documentedCoreOpenApi(): Record<string, unknown> {
  return coreOpenApi(coreRouteTable(inertRouteDeps(), { bodyLimitBytes: 1 }));
}

/** Core's listener: the route table, then 404 for everything else. Each route reads its own body. */
export function createCoreApp(options: CoreAppOptions): LoreApp {
  // Every answer of core's is spec 2's `{detail}`, its faults (500) and refusals the kit words (413, 415, 503) too.
  const app = createHttpApp({ service: 'core', logger: options.logger, metrics: options.metrics, bodyLimitBytes: options.bodyLimitBytes, parseBodies: false, errorShape: (err) => detailError(err) });
  const router = createRouter<CoreState>();
  const table = coreRouteTable(coreRouteDeps(options.core, options.signer), { bodyLimitBytes: options.bodyLimitBytes, checkResponses: options.checkResponses });
  table.mount(router);
  // A path nothing answered (no route of core's, nor the ops routes a process mounts after this): 404 in spec 2's
  // `{detail}`, as every core answer.
  app.use(async (ctx, next) => {
    await next();
    if (ctx.status === 404 && ctx.body == null && ctx.respond !== false) throw coreError('NOT_FOUND', 'route not found');
  });
  app.use(router.routes());
  // A known path with a method it does not declare: 405 with Allow (docs/fuzzing.md), in `{detail}` too.
  const notAllowed = table.methodNotAllowed();
  app.use(async (ctx, next) => {
    try {
      await notAllowed(ctx as Parameters<typeof notAllowed>[0], next);
    } catch (err) {
      throw err instanceof AppError && err.body === undefined ? detailError(err) : err;
    }
  });
  return app;
}
