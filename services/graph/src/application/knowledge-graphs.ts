import { cutUnits } from '@lore/ai';
import { TOPICS, withinReach, type GraphJobMessage, type MemoryReach } from '@lore/contracts';
import { AppError, announceBlob, claimEvent, detailError, enqueueOutbox, settleBlob, type Sql } from '@lore/runtime';
import { GRAPH_BLOB_OWNER } from './blob-owner';
import { documentNaming, withDocumentNaming } from '../domain/document-names';
import { extractEntities } from '../domain/entities';
import {
  columnRoles,
  companyNamesToResolve,
  documentSourceId,
  peopleToResolve,
  planDocument,
  planRecord,
  resolveCompanies,
  resolvePeople,
  type Plan,
  type PlannedEdge,
} from '../domain/knowledge-graph';
import { readTable } from '../domain/tabular';
import { memoryErasing } from '../store/memories';
import {
  addGraphSourcePlaces,
  closeEdgesOfDeletedDocuments,
  closeEdgesOfRowsBeyond,
  closeEdgesOfSources,
  connectorDocumentsForGraph,
  deleteGraphRow,
  deleteGraphRowsBatch,
  domainCompaniesNamed,
  factKey,
  getGraph,
  GraphLimitError,
  getJob,
  insertGraph,
  insertJob,
  lastCompletedJobStart,
  listGraphs,
  markGraphAdminOnly,
  openEdges,
  profiledPeopleAt,
  refreshGraphCounts,
  setGraphStatus,
  setJobStatus,
  unfinishedJobCount,
  upsertNodes,
  type EdgeInput,
  type GraphJobRow,
  type GraphRow,
  type JobKind,
  type SourceKind,
  type SourcePlace,
} from '../store/knowledge-graphs';
import { newId, type MemoryDeps } from './context';

export const GRAPH_JOB_CONSUMER = 'graph-worker.graph-jobs';

/**
 * Knowledge graphs (docs/memory.md, "Knowledge graphs"): create and read graphs, accept the jobs that fill them
 * (the job row, the graph's `building` status and the `lore.graph.jobs` message in one transaction), and apply a
 * job in the worker: everything a job writes, its claim of the message and its outcome in one transaction, so a
 * failed job leaves the graph's nodes and edges as they were and a redelivered one writes nothing twice.
 */

/** Limits of the knowledge-graph routes and jobs (docs/memory.md, "Knowledge graphs", Limits). */
export const GRAPH_LIMITS = {
  /** Largest uploaded table, in bytes (100,000 rows of a people list are about 12 MiB). */
  uploadMaxBytes: 25 * 1024 * 1024,
  maxRows: 100_000,
  maxColumns: 200,
  maxFieldChars: 10_000,
  /** Records and columns of one generate request. */
  maxRecords: 5_000,
  /** Largest generate body, in bytes. */
  generateBodyBytes: 16 * 1024 * 1024,
  /** Connector documents one ingest reads, and the characters of each it reads entities from. */
  maxDocuments: 5_000,
  maxDocumentChars: 100_000,
  /** Entities taken from one document. */
  maxEntitiesPerDocument: 200,
  /** Graphs of one tenant (one more is 409), all of them listed. */
  maxGraphs: 1_000,
  /** Facts or nodes deleted per transaction when a graph is deleted. */
  deleteBatchRows: 5_000,
  /** Jobs of one graph queued or running at once; one more answers 429. */
  maxPendingJobs: 20,
  /** Rows (records, documents) applied per statement batch. */
  batchRows: 1_000,
};

const GRAPH_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

export interface JobAnswer {
  jobId: string;
  status: string;
  message: string;
}

export interface JobView extends JobAnswer {
  status: GraphJobRow['status'];
  job_id: string;
  kind: JobKind;
  graph_id: string;
  list_id: string;
  stats: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
}

const notFound = (what: string) => detailError(AppError.notFound(what), `${what} not found`);

/**
 * Who asks: the tenant, whether the caller is one of its administrators (`isAdminRole`), and where it may act
 * (`memoryReach`: a credential bound to a workspace or scoped to some memories, or denied the memory).
 */
export interface GraphViewer {
  tenantId: string;
  admin: boolean;
  reach: MemoryReach;
}

/**
 * The graph as the viewer may see it (docs/memory.md): a graph holding what only administrators may see
 * (`admin_only`: a connector ingest took a document that is not public), or connector documents of a workspace or
 * memory beyond the viewer's reach, is to the viewer as absent as another tenant's.
 */
export function visibleGraph(g: GraphRow | null, viewer: GraphViewer): GraphRow | null {
  if (!g || (g.admin_only && !viewer.admin)) return null;
  if (g.source_places.length > 0 && !(viewer.reach.readsDocuments && g.source_places.every((place) => withinReach(viewer.reach, place)))) return null;
  return g;
}

/** A new graph of the tenant, within the tenant's limit of graphs (409 `{detail}` beyond it). */
async function insertLimitedGraph(sql: Sql, tenantId: string, g: Parameters<typeof insertGraph>[2]): Promise<GraphRow | null> {
  try {
    return await insertGraph(sql, tenantId, g, GRAPH_LIMITS.maxGraphs);
  } catch (err) {
    if (err instanceof GraphLimitError) throw detailError(new AppError('CONFLICT', err.message), err.message);
    throw err;
  }
}

export async function createGraph(deps: MemoryDeps, tenantId: string, input: { name: string; description?: string; source_type?: string }): Promise<GraphRow> {
  const graphId = newId('g');
  const row = await deps.db.withTenant(tenantId, (sql) =>
    insertLimitedGraph(sql, tenantId, { graph_id: graphId, name: input.name, description: input.description ?? '', source_type: input.source_type ?? 'department' }),
  );
  if (!row) throw new AppError('INTERNAL', 'a new graph id was taken');
  return row;
}

/**
 * `DELETE /memory/departments/{graph_id}` (our design; spec 2 names no deletion): the graph, its nodes and facts,
 * their history and its jobs, gone for good, and the upload bytes its jobs kept. 404 for a graph the viewer does not
 * see. The facts and nodes go in bounded transactions first, then the graph's row with whatever a job wrote
 * meanwhile; a job that runs after that finds no graph and writes nothing.
 */
export async function deleteGraph(deps: MemoryDeps, viewer: GraphViewer, graphId: string): Promise<void> {
  const tenantId = viewer.tenantId;
  // Bounded steps, another tenant's requests running between them (embedded mode's one database connection); each
  // step looks again whether the viewer still sees the graph (one made admin_only meanwhile is not theirs to delete).
  for (;;) {
    const deleted = await deps.db.withTenant(tenantId, async (sql) =>
      visibleGraph(await getGraph(sql, tenantId, graphId), viewer) ? deleteGraphRowsBatch(sql, tenantId, graphId, GRAPH_LIMITS.deleteBatchRows) : null,
    );
    if (deleted === null) throw notFound('graph');
    if (deleted === 0) break;
  }
  const blobs = await deps.db.withTenant(tenantId, async (sql) => {
    // Locked, then checked again: a graph made admin_only meanwhile stays the administrators' to delete.
    if (!visibleGraph(await getGraph(sql, tenantId, graphId, true), viewer)) return null;
    return deleteGraphRow(sql, tenantId, graphId);
  });
  if (blobs === null) throw notFound('graph');
  for (const key of blobs) await deps.blobs.delete(tenantId, key).catch((err: unknown) => deps.logger.warn({ err, graph_id: graphId }, 'could not delete the bytes of a deleted graph\'s upload'));
}

export async function graphsOf(deps: MemoryDeps, viewer: GraphViewer): Promise<GraphRow[]> {
  const all = await deps.db.withTenant(viewer.tenantId, (sql) => listGraphs(sql, viewer.tenantId, GRAPH_LIMITS.maxGraphs));
  return all.filter((g) => visibleGraph(g, viewer));
}

export async function graphOf(deps: MemoryDeps, viewer: GraphViewer, graphId: string): Promise<GraphRow> {
  const g = visibleGraph(await deps.db.withTenant(viewer.tenantId, (sql) => getGraph(sql, viewer.tenantId, graphId)), viewer);
  if (!g) throw notFound('graph');
  return g;
}

/** A job, when its graph is one the viewer may see. */
export async function jobOf(deps: MemoryDeps, viewer: GraphViewer, jobId: string): Promise<JobView> {
  const j = await deps.db.withTenant(viewer.tenantId, async (sql) => {
    const job = await getJob(sql, viewer.tenantId, jobId);
    return job && visibleGraph(await getGraph(sql, viewer.tenantId, job.graph_id), viewer) ? job : null;
  });
  if (!j) throw notFound('job');
  return jobView(j);
}

export function jobView(j: GraphJobRow): JobView {
  return {
    jobId: j.job_id,
    job_id: j.job_id,
    status: j.status,
    message: j.message,
    kind: j.kind,
    graph_id: j.graph_id,
    list_id: j.graph_id,
    stats: j.stats,
    created_at: j.created_at,
    updated_at: j.updated_at,
    started_at: j.started_at,
    finished_at: j.finished_at,
  };
}

/**
 * Records a job for a graph in the caller's transaction: the job row (`queued`), the graph `building`, and the
 * `lore.graph.jobs` message through the outbox (keyed by graph, so one graph's jobs apply in order).
 */
async function enqueueJob(sql: Sql, tenantId: string, graph: GraphRow, kind: JobKind, params: Record<string, unknown>, message: string): Promise<GraphJobRow> {
  // Counted under the graph's row lock (every caller holds it), so two requests cannot both pass the limit.
  if ((await unfinishedJobCount(sql, tenantId, graph.graph_id, '')) >= GRAPH_LIMITS.maxPendingJobs) {
    throw detailError(new AppError('RATE_LIMITED', `the graph has ${GRAPH_LIMITS.maxPendingJobs} jobs queued or running; wait for one to end`, { headers: { 'retry-after': '5' } }));
  }
  const job = await insertJob(sql, tenantId, { job_id: newId('gj'), graph_id: graph.graph_id, kind, message, params });
  await setGraphStatus(sql, tenantId, graph.graph_id, 'building', null);
  const msg: GraphJobMessage = { event_id: newId('gjm'), tenant_id: tenantId, graph_id: graph.graph_id, job_id: job.job_id };
  await enqueueOutbox(sql, { topic: TOPICS.graphJobs, key: graph.graph_id, eventId: msg.event_id, value: msg });
  return job;
}

const answer = (j: GraphJobRow): JobAnswer => ({ jobId: j.job_id, status: j.status, message: j.message });

/**
 * `POST /memory/upload`: stores the file, then records the job. The file must name an existing graph and hold
 * something; whether it is a readable table is decided by the job (a failed job says why).
 */
export async function acceptUploadJob(
  deps: MemoryDeps,
  viewer: GraphViewer,
  listId: string,
  file: { filename: string; contentType: string; data: Buffer },
): Promise<JobAnswer> {
  const tenantId = viewer.tenantId;
  const known = visibleGraph(await deps.db.withTenant(tenantId, (sql) => getGraph(sql, tenantId, listId)), viewer);
  if (!known) throw notFound('graph');
  const blobKey = `${tenantId}/graph-uploads/${newId('gu')}`;
  // Announced before the bytes, settled with the job: a process stopped in between leaves bytes the worker's sweep
  // deletes (runtime's blob intents).
  await announceBlob(deps.db, GRAPH_BLOB_OWNER, tenantId, blobKey);
  await deps.blobs.put(tenantId, blobKey, file.data, file.contentType || 'text/csv', GRAPH_LIMITS.uploadMaxBytes);
  try {
    const job = await deps.db.withTenant(tenantId, async (sql) => {
      const graph = visibleGraph(await getGraph(sql, tenantId, listId, true), viewer);
      if (!graph) throw notFound('graph');
      await settleBlob(sql, tenantId, blobKey);
      return enqueueJob(sql, tenantId, graph, 'upload', { blob_key: blobKey, filename: cutUnits(file.filename, 200), size_bytes: file.data.length }, `upload of ${cutUnits(file.filename, 200)} queued`);
    });
    return answer(job);
  } catch (err) {
    await deps.blobs.delete(tenantId, blobKey).catch((e: unknown) => deps.logger.warn({ err: e }, 'could not delete the bytes of a refused graph upload'));
    throw err;
  }
}

/**
 * `POST /memory/ingest/connectors`: with `graph_name` a graph of id `list_id` is created when the tenant has none
 * (source type `connectors`); without it `list_id` must name one.
 */
export async function acceptConnectorJob(
  deps: MemoryDeps,
  viewer: GraphViewer,
  input: { list_id: string; source_types: string[] | null; mode: 'full' | 'incremental'; graph_name?: string },
): Promise<JobAnswer> {
  const tenantId = viewer.tenantId;
  if (!viewer.reach.readsDocuments) {
    throw detailError(AppError.forbidden('this credential may not read memory documents (its key scope, app permissions or OAuth scopes leave the memory out), so it cannot ingest them into a graph'));
  }
  const job = await deps.db.withTenant(tenantId, async (sql) => {
    const existing = await getGraph(sql, tenantId, input.list_id, true);
    // A graph only administrators may see is absent to anyone else: neither filled nor made again under its id.
    if (existing && !visibleGraph(existing, viewer)) throw notFound('graph');
    let graph = existing;
    if (!graph && input.graph_name !== undefined) {
      if (!GRAPH_ID_RE.test(input.list_id)) throw new AppError('UNPROCESSABLE', 'list_id is invalid', { body: { detail: [{ loc: ['body', 'list_id'], msg: 'a new graph id is 1-128 letters, digits, _ . : or -', type: 'value_error' }] } });
      await insertLimitedGraph(sql, tenantId, { graph_id: input.list_id, name: input.graph_name, description: '', source_type: 'connectors' });
      graph = await getGraph(sql, tenantId, input.list_id, true);
    }
    if (!graph) throw notFound('graph');
    const sources = input.source_types === null ? 'all sources' : input.source_types.join(', ') || 'no source';
    // The job reads only the memories within the caller's reach (kept with it, as whether it is an administrator).
    const reach = { workspace_id: viewer.reach.workspaceId, memory_ids: viewer.reach.memoryIds };
    return enqueueJob(sql, tenantId, graph, 'connectors', { source_types: input.source_types, mode: input.mode, admin: viewer.admin, reach }, `${input.mode} ingest of ${sources} queued`);
  });
  return answer(job);
}

export interface GenerateInput {
  listId: string;
  workflowCategory?: string;
  records: Array<{ cells: Record<string, { value?: unknown; _id?: string } | null | undefined>; step_source?: string; metadata?: Record<string, unknown>; id?: string }>;
  columns: Array<{ id: string; header: string; type: string }>;
}

/**
 * `POST /memory/generate`: the list's records and columns are the job's input (kept in its row); the graph of id
 * `listId` is created (source type `list`) when the tenant has none.
 */
export async function acceptGenerateJob(deps: MemoryDeps, viewer: GraphViewer, input: GenerateInput): Promise<JobAnswer> {
  const tenantId = viewer.tenantId;
  const job = await deps.db.withTenant(tenantId, async (sql) => {
    let graph = await getGraph(sql, tenantId, input.listId, true);
    if (graph && !visibleGraph(graph, viewer)) throw notFound('graph');
    if (!graph) {
      if (!GRAPH_ID_RE.test(input.listId)) throw notFound('graph');
      await insertLimitedGraph(sql, tenantId, { graph_id: input.listId, name: input.workflowCategory || input.listId, description: '', source_type: 'list' });
      graph = await getGraph(sql, tenantId, input.listId, true);
    }
    if (!graph) throw notFound('graph');
    return enqueueJob(
      sql,
      tenantId,
      graph,
      'generate',
      { workflowCategory: input.workflowCategory ?? '', records: input.records, columns: input.columns },
      `graph of ${input.records.length} records queued`,
    );
  });
  return answer(job);
}

// ------------------------------------------------------------------------------------------------------ the worker

/** A job's input that can never become a graph (a malformed file...): the job fails with this reason, no retry. */
class JobInputError extends Error {}

interface Applied {
  rows: number;
  nodes_created: number;
  edges_opened: number;
  edges_closed: number;
}

/**
 * Applies one `lore.graph.jobs` message. Input that cannot become a graph fails the job with its reason and sets
 * the graph `error` (its nodes and edges untouched); an infrastructure error throws, the transaction rolls back
 * and the bus redelivers. A job already completed or failed, or a message already claimed, changes nothing.
 */
export async function processGraphJob(
  deps: MemoryDeps,
  msg: GraphJobMessage,
  eventId: string,
): Promise<'completed' | 'failed' | 'duplicate' | 'missing'> {
  const tenantId = msg.tenant_id;
  const job = await deps.db.withTenant(tenantId, (sql) => getJob(sql, tenantId, msg.job_id));
  if (!job) return 'missing';
  if (job.status === 'completed' || job.status === 'failed') return 'duplicate';
  await deps.db.withTenant(tenantId, (sql) => setJobStatus(sql, tenantId, job.job_id, 'running', `${job.kind} running`));
  let plans: JobPlans;
  try {
    plans = await planJob(deps, tenantId, job);
  } catch (err) {
    if (!(err instanceof JobInputError)) throw err;
    await finishFailed(deps, tenantId, job, eventId, err.message);
    return 'failed';
  }
  const outcome = await applyJob(deps, tenantId, job, eventId, plans).catch(async (err: unknown) => {
    // A value the database refuses (class 22: data exception, 23: integrity, 54: a limit such as an index row's size)
    // would be refused again on every redelivery: the job fails with the reason instead, and the rolled-back
    // transaction left the graph as it was.
    const code = (err as { code?: unknown } | null)?.code;
    if (typeof code !== 'string' || !/^(2[23]|54)/.test(code)) throw err;
    deps.logger.warn({ err, job_id: job.job_id }, 'a graph job\'s input was refused by the database');
    await finishFailed(deps, tenantId, job, eventId, `the input holds a value that cannot be stored (${code})`);
    return 'failed' as const;
  });
  if (job.kind === 'upload' && outcome !== 'failed') await dropUploadBytes(deps, tenantId, job);
  return outcome ?? 'duplicate';
}

/**
 * A connector job's plans less the documents of memories an erasure has begun on since the job read them. Each
 * memory's row is locked KEY SHARE until the job's transaction ends (`memoryErasing`): an erasure that begins later
 * waits for it, then finds the memory in the graph's `source_places` and erases what the job wrote.
 */
async function withoutErasedMemories(sql: Sql, tenantId: string, plans: JobPlans): Promise<JobPlans> {
  if (!plans.places || plans.places.length === 0) return plans;
  const erased = new Set<string>();
  for (const memory of new Set(plans.places.map((p) => p.memory_id))) if (await memoryErasing(sql, tenantId, memory)) erased.add(memory);
  if (erased.size === 0) return plans;
  const kept = plans.plans.filter((p) => p.memoryId === undefined || !erased.has(p.memoryId));
  return { ...plans, plans: kept, rows: kept.length, places: plans.places.filter((p) => !erased.has(p.memory_id)) };
}

/** The job's one transaction: its claim, its nodes and edges, its outcome and the graph's status. */
function applyJob(deps: MemoryDeps, tenantId: string, job: GraphJobRow, eventId: string, planned: JobPlans): Promise<'completed' | null> {
  return deps.db.withTenant(tenantId, async (sql) => {
    if (!(await claimEvent(sql, GRAPH_JOB_CONSUMER, eventId))) return null;
    const graph = await getGraph(sql, tenantId, job.graph_id, true);
    if (!graph) return null;
    const plans = await withoutErasedMemories(sql, tenantId, planned);
    const applied = await applyPlans(sql, tenantId, job, plans);
    if (plans.adminOnly) await markGraphAdminOnly(sql, tenantId, job.graph_id);
    if (plans.places && plans.places.length > 0) await addGraphSourcePlaces(sql, tenantId, job.graph_id, plans.places);
    const counts = await refreshGraphCounts(sql, tenantId, job.graph_id);
    const stats = { ...applied, ...counts };
    const message = `${applied.rows} ${plans.unit} read: ${applied.nodes_created} nodes created, ${applied.edges_opened} edges opened, ${applied.edges_closed} closed`;
    await setJobStatus(sql, tenantId, job.job_id, 'completed', message, stats);
    const pending = await unfinishedJobCount(sql, tenantId, job.graph_id, job.job_id);
    await setGraphStatus(sql, tenantId, job.graph_id, pending > 0 ? 'building' : 'ready', null);
    return 'completed' as const;
  });
}

/**
 * A job whose message was dead-lettered (docs/runtime.md, "Poison messages"): failed with `reason`, and its graph out
 * of `building` once no other job of it is pending, unless the job finished meanwhile.
 */
export async function failDeadLetteredJob(deps: MemoryDeps, msg: GraphJobMessage, eventId: string, reason: string): Promise<'failed' | 'finished' | 'missing'> {
  const job = await deps.db.withTenant(msg.tenant_id, (sql) => getJob(sql, msg.tenant_id, msg.job_id));
  if (!job) return 'missing';
  if (job.status === 'completed' || job.status === 'failed') return 'finished';
  await finishFailed(deps, msg.tenant_id, job, eventId, reason);
  return 'failed';
}

async function finishFailed(deps: MemoryDeps, tenantId: string, job: GraphJobRow, eventId: string, reason: string): Promise<void> {
  await deps.db.withTenant(tenantId, async (sql) => {
    if (!(await claimEvent(sql, GRAPH_JOB_CONSUMER, eventId))) return;
    await setJobStatus(sql, tenantId, job.job_id, 'failed', reason);
    const graph = await getGraph(sql, tenantId, job.graph_id, true);
    if (!graph) return;
    const pending = await unfinishedJobCount(sql, tenantId, job.graph_id, job.job_id);
    await setGraphStatus(sql, tenantId, job.graph_id, pending > 0 ? 'building' : 'error', `${job.kind} job ${job.job_id} failed: ${reason}`);
  });
  if (job.kind === 'upload') await dropUploadBytes(deps, tenantId, job);
}

async function dropUploadBytes(deps: MemoryDeps, tenantId: string, job: GraphJobRow): Promise<void> {
  const key = typeof job.params.blob_key === 'string' ? job.params.blob_key : null;
  if (key) await deps.blobs.delete(tenantId, key).catch((e: unknown) => deps.logger.warn({ err: e, job_id: job.job_id }, 'could not delete the bytes of a graph upload'));
}

/** What a job will write, source by source: each entry's edges replace the open edges of its sources. */
interface JobPlans {
  unit: string;
  rows: number;
  sourceKind: SourceKind;
  plans: Array<{ plan: Plan; sources: string[]; memoryId?: string }>;
  /** A connector ingest also closes the edges of documents deleted since. */
  closeDeletedDocuments: boolean;
  /** An upload also closes what the rows past its last said, of an earlier version of the same file. */
  closeRowsBeyond?: { filename: string; lastRow: number };
  /** The job takes a document only administrators may see: the graph becomes `admin_only`. */
  adminOnly?: boolean;
  /** The workspaces and memories of the connector documents the job takes (the graph's `source_places`). */
  places?: SourcePlace[];
}

async function planJob(deps: MemoryDeps, tenantId: string, job: GraphJobRow): Promise<JobPlans> {
  switch (job.kind) {
    case 'upload':
      return planUpload(deps, tenantId, job);
    case 'generate':
      return planGenerate(job);
    case 'connectors':
      return planConnectors(deps, tenantId, job);
  }
}

async function planUpload(deps: MemoryDeps, tenantId: string, job: GraphJobRow): Promise<JobPlans> {
  const key = String(job.params.blob_key ?? '');
  const filename = String(job.params.filename ?? 'upload');
  const blob = await deps.blobs.get(tenantId, key);
  if (!blob) throw new JobInputError('the uploaded file is gone');
  const table = readTable(blob.data, { maxRows: GRAPH_LIMITS.maxRows, maxColumns: GRAPH_LIMITS.maxColumns, maxFieldChars: GRAPH_LIMITS.maxFieldChars });
  if (!table.ok) throw new JobInputError(`${filename}: ${table.reason}`);
  const columns = table.header.map((h) => ({ id: h, header: h }));
  const roles = columnRoles(columns);
  const plans = table.rows.map((values, i) => {
    // A row of a file is named by the file and its line, so uploading a changed version of the file again closes
    // what its rows no longer say, and what rows it no longer has said (`closeRowsBeyond`).
    const sourceId = `${filename}#${i + 2}`;
    const source = { kind: 'row' as const, id: sourceId, ref: { filename, row: i + 2, job_id: job.job_id } };
    return { plan: planRecord(columns, roles, { values, source, reportName: `${filename} row ${i + 2}`, reportId: sourceId }), sources: [sourceId] };
  });
  return { unit: 'rows', rows: table.rows.length, sourceKind: 'row', plans, closeDeletedDocuments: false, closeRowsBeyond: { filename, lastRow: table.rows.length + 1 } };
}

function planGenerate(job: GraphJobRow): JobPlans {
  const input = job.params as unknown as Omit<GenerateInput, 'listId'>;
  const columns = input.columns.map((c) => ({ id: c.id, header: c.header || c.id }));
  const roles = columnRoles(columns);
  const seen = new Set<string>();
  const plans = input.records.map((record, i) => {
    const meta = record.metadata ?? {};
    let recordId = String(meta._id ?? meta.uniqueID ?? record.id ?? firstCellId(record) ?? `record-${i + 1}`);
    // Two records of one list under one id would each close what the other said: the later one is told apart.
    if (seen.has(recordId)) recordId = `${recordId}#${i + 1}`;
    seen.add(recordId);
    const values = columns.map((c) => cellText(record.cells[c.id]?.value));
    const source = { kind: 'cell' as const, id: `${recordId}:*`, ref: { record: recordId, step_source: record.step_source ?? '' } };
    const cellSource = (index: number) => {
      const column = columns[index]!;
      return { kind: 'cell' as const, id: `${recordId}:${column.id}`, ref: { record: recordId, column: column.id, header: column.header } };
    };
    const name = values[roles.indexOf('person_name')] || values[roles.indexOf('company_name')] || recordId;
    const plan = planRecord(columns, roles, { values, source, cellSource, reportName: name, reportId: `list:${job.graph_id}:${recordId}` });
    return { plan, sources: [source.id, ...columns.map((_, ci) => cellSource(ci).id)] };
  });
  return { unit: 'records', rows: input.records.length, sourceKind: 'cell', plans, closeDeletedDocuments: false };
}

function firstCellId(record: GenerateInput['records'][number]): string | null {
  for (const cell of Object.values(record.cells)) if (cell && typeof cell._id === 'string' && cell._id) return cell._id;
  return null;
}

function cellText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return '';
}

async function planConnectors(deps: MemoryDeps, tenantId: string, job: GraphJobRow): Promise<JobPlans> {
  const sourceTypes = Array.isArray(job.params.source_types) ? (job.params.source_types as string[]) : null;
  const incremental = job.params.mode === 'incremental';
  // The memories within the reach of the caller that queued it (a job queued before reach was kept: every memory).
  const reach = (job.params.reach ?? {}) as { workspace_id?: unknown; memory_ids?: unknown };
  const docs = await deps.db.withTenant(tenantId, async (sql) => {
    const since = incremental ? await lastCompletedJobStart(sql, tenantId, job.graph_id, 'connectors', job.job_id) : null;
    return connectorDocumentsForGraph(sql, tenantId, {
      sourceTypes,
      admin: job.params.admin === true,
      changedSince: since,
      limit: GRAPH_LIMITS.maxDocuments,
      maxChars: GRAPH_LIMITS.maxDocumentChars,
      workspaceId: typeof reach.workspace_id === 'string' ? reach.workspace_id : null,
      memoryIds: Array.isArray(reach.memory_ids) ? reach.memory_ids.filter((m): m is string => typeof m === 'string') : null,
    });
  });
  const plans = docs.map((d) => {
    // A file is named by its file name, anything else by its title; the node keeps both (domain/document-names.ts).
    const naming = documentNaming(d);
    const doc = { doc_id: d.doc_id, memory_id: d.memory_id, cc_pair_id: Number(d.cc_pair_id), title: naming.name, link: d.link, source_type: d.source_type, external_id: d.external_id, entities: extractEntities(d.content, GRAPH_LIMITS.maxEntitiesPerDocument) };
    return {
      plan: withDocumentNaming(planDocument(doc, GRAPH_LIMITS.maxEntitiesPerDocument), naming),
      sources: [documentSourceId(doc)],
      memoryId: d.memory_id,
    };
  });
  // Both modes close what deleted documents said (a changed document is a new copy of the same source).
  const places = new Map(docs.map((d) => [`${d.workspace_id}\u0000${d.memory_id}`, { workspace_id: d.workspace_id, memory_id: d.memory_id }]));
  return { unit: 'documents', rows: docs.length, sourceKind: 'document', plans, closeDeletedDocuments: true, adminOnly: docs.some((d) => !d.access_public), places: [...places.values()] };
}

/**
 * The job's plans with each name-keyed company and profile-less person given the key of the one node of the other
 * form it is, in the graph or in the job (docs/memory.md, "Entity resolution"): companies first, then people at the
 * resolved companies. Read in the job's transaction, under the graph's row lock.
 */
async function resolvedPlans(sql: Sql, tenantId: string, graphId: string, jobPlans: JobPlans): Promise<JobPlans['plans']> {
  let plans = jobPlans.plans.map((p) => p.plan);
  plans = resolveCompanies(plans, await domainCompaniesNamed(sql, tenantId, graphId, companyNamesToResolve(plans)));
  plans = resolvePeople(plans, await profiledPeopleAt(sql, tenantId, graphId, peopleToResolve(plans)));
  return jobPlans.plans.map((p, i) => ({ ...p, plan: plans[i]! }));
}

/** Writes the plans in batches: nodes resolved, then each batch's sources' edges closed and opened. */
async function applyPlans(sql: Sql, tenantId: string, job: GraphJobRow, jobPlans: JobPlans): Promise<Applied> {
  const applied: Applied = { rows: jobPlans.rows, nodes_created: 0, edges_opened: 0, edges_closed: 0 };
  const all = await resolvedPlans(sql, tenantId, job.graph_id, jobPlans);
  for (let start = 0; start < all.length; start += GRAPH_LIMITS.batchRows) {
    const batch = all.slice(start, start + GRAPH_LIMITS.batchRows);
    const { ids, created } = await upsertNodes(sql, tenantId, job.graph_id, batch.flatMap((p) => p.plan.nodes));
    applied.nodes_created += created;
    const edges: EdgeInput[] = [];
    for (const p of batch) for (const e of p.plan.edges) {
      const resolved = resolveEdge(e, ids);
      if (resolved) edges.push(resolved);
    }
    const keep = new Set(edges.map(factKey));
    applied.edges_closed += await closeEdgesOfSources(sql, tenantId, job.graph_id, jobPlans.sourceKind, batch.flatMap((p) => p.sources), keep);
    applied.edges_opened += await openEdges(sql, tenantId, job.graph_id, job.job_id, edges);
  }
  if (jobPlans.closeDeletedDocuments) applied.edges_closed += await closeEdgesOfDeletedDocuments(sql, tenantId, job.graph_id);
  if (jobPlans.closeRowsBeyond) applied.edges_closed += await closeEdgesOfRowsBeyond(sql, tenantId, job.graph_id, jobPlans.closeRowsBeyond.filename, jobPlans.closeRowsBeyond.lastRow);
  return applied;
}

function resolveEdge(e: PlannedEdge, ids: ReadonlyMap<string, string>): EdgeInput | null {
  const from = ids.get(e.from);
  const to = ids.get(e.to);
  if (!from || !to || from === to) return null;
  return { from, to, label: e.label, source: e.source };
}
