import { cutUnits } from '@lore/ai';
import type { RouterContext } from '@koa/router';
import { isAdminRole, memoryReach } from '@lore/contracts';
import { AppError, detailError, detailValidationError, multipartParser, MultipartRefusedError, type MultipartParser, type Identity, feedMultipart } from '@lore/runtime';
import type { z } from 'zod';
import type { GenerateInput, GraphViewer, JobAnswer, JobView } from '../../application/knowledge-graphs';
import type { GraphRow } from '../../store/knowledge-graphs';
import { BEARER_OR_KEY, route, type GraphState, type MemoryGuard } from '../route';
import {
  ConnectorIngestBody,
  CreateGraphBody,
  CreatedGraphSchema,
  GenerateBody,
  GraphListSchema,
  GraphSchema,
  GRAPH_UPLOAD_BODY,
  JobAnswerSchema,
  JobSchema,
  detailStringView,
  presentGraph,
  presentJob,
  presentJobAnswer,
  validationView,
} from './schema';

export interface KnowledgeGraphRouteDeps {
  guard: MemoryGuard;
  graphs: {
    uploadMaxBytes: number;
    generateBodyBytes: number;
    list: (viewer: GraphViewer) => Promise<GraphRow[]>;
    get: (viewer: GraphViewer, graphId: string) => Promise<GraphRow>;
    create: (tenantId: string, input: z.output<typeof CreateGraphBody>) => Promise<GraphRow>;
    remove: (viewer: GraphViewer, graphId: string) => Promise<void>;
    upload: (viewer: GraphViewer, listId: string, file: { filename: string; contentType: string; data: Buffer }) => Promise<JobAnswer>;
    ingestConnectors: (viewer: GraphViewer, input: z.output<typeof ConnectorIngestBody>) => Promise<JobAnswer>;
    generate: (viewer: GraphViewer, input: GenerateInput) => Promise<JobAnswer>;
    job: (viewer: GraphViewer, jobId: string) => Promise<JobView>;
  };
}

const detail = (description: string) => ({ description, schema: detailStringView });
const SPEC2 = { invalid: detailValidationError, unreadable: (e: AppError) => detailError(e) };
const INVALID = { 422: { description: 'validation failure: `detail` lists every issue (loc, msg, type)', schema: validationView } };
/** What the body reader refuses before validation (bytes that are not clean JSON), in spec 2's `{detail}`. */
const UNREADABLE = { 400: { description: 'the body is not clean JSON (malformed, not UTF-8, a NUL character, nested too deep)', schema: detailStringView } };
/** Who may not write to a graph (the graph's guard and the gateway's refusals, all `{detail}`). */
const WRITE_REFUSED = { 403: detail('the key is read-only, its scope does not include the graph module, or the credential\'s IP allowlist refuses the caller') };
/** Who may not read a graph. */
const READ_REFUSED = { 403: detail('the key is write-only, its scope does not include the graph module, or the credential\'s IP allowlist refuses the caller') };
/** What every job route answers while its graph already has the most jobs queued or running. */
const BUSY = { 429: detail('the graph already has 20 jobs queued or running (Retry-After)') };
/** What a route that may create a graph answers once the tenant has the most graphs it may have. */
const TOO_MANY_GRAPHS = { 409: detail('the tenant has 1,000 graphs, the most it may have: delete one first') };

const tenantOf = (ctx: RouterContext<GraphState>): string => (ctx.state.identity as Identity).tenant_id;
/** The caller as the graphs see it: a graph only administrators may see, or built from memories beyond its reach, is absent to it. */
export const viewerOf = (ctx: RouterContext<GraphState>): GraphViewer => {
  const identity = ctx.state.identity as Identity;
  return { tenantId: identity.tenant_id, admin: isAdminRole(identity.role), reach: memoryReach(identity) };
};

const unprocessable = (loc: string[], msg: string) => new AppError('UNPROCESSABLE', msg, { body: { detail: [{ loc, msg, type: 'value_error' }] } });

/** Multipart overhead allowed on top of the file before Content-Length alone says 413. */
const MULTIPART_SLACK = 64 * 1024;

/** Parts one upload's body may hold (fields and files together), and text fields among them; busboy drops those past either. */
const UPLOAD_PARTS = 25;
const UPLOAD_FIELDS = 20;

type Issue = { loc: string[]; msg: string; type: string };

/** A body with more parts than busboy reads: refused whole, since what it skipped (`list_id`, `file`) is unknown. */
const tooManyParts = () =>
  unprocessable(['body'], `an upload holds at most ${UPLOAD_PARTS} parts, at most ${UPLOAD_FIELDS} of them text fields: send "file", "list_id" and fewer other parts`);

/**
 * Reads `POST /memory/upload`'s multipart body: the `file` part (kept in memory up to the limit: a table is read
 * whole by its job anyway) and the `list_id` field, in either order, whatever other parts come before them. Exactly
 * one `file` part, sent as a file: a file part of another name (`list_id` sent as a file, an `attachment`) or a second
 * `file` is drained and refused (422 at its own `loc`), never taken for the table. Before 2026-11-30 busboy was told
 * to take one file part at most, so a file part of another name sent first used it up and the real `file` was
 * dropped unread ("file is required"). `list_id` is taken as sent, like the JSON routes' ids, and sent once: a
 * second `list_id` is 422 (which graph was meant is unknowable). A body past `UPLOAD_PARTS` parts or `UPLOAD_FIELDS`
 * text fields is refused whole (`tooManyParts`): before 2026-11-30 busboy dropped the later parts without a word, so
 * a `list_id` or `file` sent after them was "required".
 */
function readUpload(ctx: RouterContext<GraphState>, maxBytes: number): Promise<{ listId: string; filename: string; contentType: string; data: Buffer }> {
  return new Promise((resolve, reject) => {
    let bb: MultipartParser;
    try {
      // busboy says `limit` when a file reaches `fileSize`: one byte more than allowed, so a file of exactly `maxBytes` passes.
      // Every file part reaches the handler below (`files` as many as parts), which keeps only `file`.
      bb = multipartParser(
        ctx.req.headers,
        { files: UPLOAD_PARTS, fields: UPLOAD_FIELDS, fieldSize: 64 * 1024, fileSize: maxBytes + 1, parts: UPLOAD_PARTS },
        'send multipart/form-data with a file field named "file" and list_id',
      );
    } catch (err) {
      reject(err instanceof MultipartRefusedError ? detailError(new AppError(err.code, err.message)) : err);
      return;
    }
    let listId: string | null = null;
    let file: { filename: string; contentType: string; data: Buffer } | null = null;
    /** Problems of the parts sent, one per `loc` (the first found). */
    const issues = new Map<string, Issue>();
    const refuse = (field: string, msg: string, type = 'value_error') => {
      if (!issues.has(field)) issues.set(field, { loc: ['body', field], msg, type });
    };
    let tooLarge = false;
    let overParts = false;
    let pending = 0;
    let closed = false;
    const finish = () => {
      if (!closed || pending > 0) return;
      if (tooLarge) return reject(detailError(new AppError('PAYLOAD_TOO_LARGE', `graph uploads are limited to ${maxBytes} bytes`)));
      if (overParts) return reject(tooManyParts());
      if (!file) refuse('file', 'a file field named "file" is required', 'missing');
      if (!listId) refuse('list_id', 'list_id is required', 'missing');
      if (issues.size > 0) return reject(new AppError('UNPROCESSABLE', 'request body is invalid', { body: { detail: [...issues.values()] } }));
      if (file!.data.length === 0) return reject(unprocessable(['body', 'file'], 'the file is empty'));
      resolve({ listId: listId!, ...file! });
    };
    bb.on('field', (name, value) => {
      if (name === 'list_id' && listId !== null) refuse('list_id', 'list_id is sent more than once: send it once');
      else if (name === 'list_id') listId = value;
      else if (name === 'file') refuse('file', '"file" must be a file part (with a filename), not a text field');
    });
    bb.on('file', (name, stream, info) => {
      if (name !== 'file' || file || pending > 0) {
        // Read to its end (the body goes on after it) and thrown away.
        stream.resume();
        if (name === 'file') refuse('file', 'one file per upload: the body holds more than one "file" part');
        else if (name === 'list_id') refuse('list_id', 'list_id must be a text field, not a file');
        else refuse(cutUnits(name, 100), `a file part named "${cutUnits(name, 100)}" is not taken: the table goes in the part named "file"`);
        return;
      }
      pending += 1;
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => {
        tooLarge = true;
      });
      stream.on('end', () => {
        file = { filename: info.filename || 'upload.csv', contentType: info.mimeType || 'text/csv', data: Buffer.concat(chunks) };
        pending -= 1;
        finish();
      });
    });
    for (const limit of ['partsLimit', 'filesLimit', 'fieldsLimit'] as const) {
      bb.on(limit, () => {
        overParts = true;
      });
    }
    bb.on('error', () => reject(detailError(AppError.badRequest('the multipart body is malformed'))));
    bb.on('close', () => {
      closed = true;
      finish();
    });
    feedMultipart(ctx.req, bb);
  });
}

/**
 * Spec 2's knowledge-graph routes (`/memory/*`): graphs (departments and lists) of the caller's tenant, and the
 * background jobs that fill them (docs/memory.md, "Knowledge graphs"). Validation failures answer spec 2's 422
 * `detail` array, other refusals `{detail}`.
 */
export function knowledgeGraphRoutes(deps: KnowledgeGraphRouteDeps) {
  const tags = ['knowledge graphs'];
  const common = { security: BEARER_OR_KEY, tags, ...SPEC2 };
  return [
    route({
      ...common, method: 'get', path: '/memory/departments', operationId: 'listDepartments', summary: 'The tenant\'s knowledge graphs (departments and lists), newest first',
      guards: [deps.guard('read')],
      ok: { status: 200, description: 'every graph of the tenant (at most 1,000)', schema: GraphListSchema },
      responses: { ...READ_REFUSED },
      handler: async (ctx) => ({ departments: (await deps.graphs.list(viewerOf(ctx))).map(presentGraph) }),
    }),
    route({
      ...common, method: 'post', path: '/memory/departments/create', operationId: 'createDepartment', summary: 'Create a knowledge graph (status `empty`)',
      guards: [deps.guard('write')],
      body: CreateGraphBody,
      ok: { status: 200, description: 'the graph, with tenant_id and list_id (equal to graph_id)', schema: CreatedGraphSchema },
      responses: { ...WRITE_REFUSED, ...INVALID, ...UNREADABLE, ...TOO_MANY_GRAPHS },
      handler: async (ctx, { body }) => {
        const g = await deps.graphs.create(tenantOf(ctx), body);
        return { ...presentGraph(g), tenant_id: tenantOf(ctx), list_id: g.graph_id };
      },
    }),
    route({
      ...common, method: 'get', path: '/memory/departments/:graph_id', operationId: 'getDepartment', summary: 'A knowledge graph',
      guards: [deps.guard('read')],
      ok: { status: 200, description: 'the graph', schema: GraphSchema },
      responses: { ...READ_REFUSED, 404: detail('no graph of this id in the tenant') },
      handler: async (ctx, { params }) => presentGraph(await deps.graphs.get(viewerOf(ctx), params.graph_id ?? '')),
    }),
    route({
      ...common, method: 'delete', path: '/memory/departments/:graph_id', operationId: 'deleteDepartment', summary: 'Delete a knowledge graph with its nodes, facts, history and jobs (our design)',
      guards: [deps.guard('write')],
      ok: { status: 204, description: 'deleted for good, the bytes its uploads kept included' },
      responses: { ...WRITE_REFUSED, 404: detail('no graph of this id in the tenant') },
      handler: async (ctx, { params }) => {
        await deps.graphs.remove(viewerOf(ctx), params.graph_id ?? '');
        ctx.status = 204;
      },
    }),
    route({
      ...common, method: 'post', path: '/memory/upload', operationId: 'uploadToGraph', summary: 'Fill a graph from a table (background job)',
      guards: [deps.guard('write')],
      bodyKind: 'stream', bodyContent: GRAPH_UPLOAD_BODY,
      ok: { status: 200, description: 'the job, status `queued`', schema: JobAnswerSchema },
      responses: {
        ...WRITE_REFUSED, ...INVALID, ...BUSY,
        400: detail('malformed multipart body'),
        404: detail('no graph `list_id` in the tenant'),
        413: detail('the file is larger than the limit'),
        415: detail('the body is not multipart/form-data'),
      },
      handler: async (ctx) => {
        const max = deps.graphs.uploadMaxBytes;
        const declared = Number(ctx.get('content-length'));
        if (Number.isFinite(declared) && declared > max + MULTIPART_SLACK) throw detailError(new AppError('PAYLOAD_TOO_LARGE', `graph uploads are limited to ${max} bytes`));
        const upload = await readUpload(ctx, max);
        const { listId, ...file } = upload;
        return presentJobAnswer(await deps.graphs.upload(viewerOf(ctx), listId, file));
      },
    }),
    route({
      ...common, method: 'post', path: '/memory/ingest/connectors', operationId: 'ingestConnectorsToGraph', summary: 'Fill a graph from the tenant\'s connector documents (background job)',
      guards: [deps.guard('write')],
      body: ConnectorIngestBody,
      ok: { status: 200, description: 'the job, status `queued`', schema: JobAnswerSchema },
      responses: { ...WRITE_REFUSED, ...INVALID, ...UNREADABLE, ...BUSY, ...TOO_MANY_GRAPHS, 404: detail('no graph `list_id` in the tenant and no `graph_name` to create it') },
      handler: async (ctx, { body }) =>
        presentJobAnswer(await deps.graphs.ingestConnectors(viewerOf(ctx), body)),
    }),
    route({
      ...common, method: 'post', path: '/memory/generate', operationId: 'generateGraph', summary: 'Build a graph from a saved list\'s records and columns (background job)',
      guards: [deps.guard('write')],
      body: GenerateBody,
      bodyLimitBytes: deps.graphs.generateBodyBytes,
      ok: { status: 200, description: 'the job, status `queued`', schema: JobAnswerSchema },
      responses: { ...WRITE_REFUSED, ...INVALID, ...UNREADABLE, ...BUSY, ...TOO_MANY_GRAPHS, 404: detail('`listId` is not a usable graph id') },
      handler: async (ctx, { body }) => presentJobAnswer(await deps.graphs.generate(viewerOf(ctx), body as GenerateInput)),
    }),
    route({
      ...common, method: 'get', path: '/memory/jobs/:job_id', operationId: 'getGraphJob', summary: 'A knowledge-graph job: queued → running → completed | failed',
      guards: [deps.guard('read')],
      ok: { status: 200, description: 'the job', schema: JobSchema },
      responses: { ...READ_REFUSED, 404: detail('no job of this id in the tenant') },
      handler: async (ctx, { params }) => presentJob(await deps.graphs.job(viewerOf(ctx), params.job_id ?? '')),
    }),
  ];
}
