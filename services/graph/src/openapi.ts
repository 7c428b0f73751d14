import { z } from 'zod';
import { MEMORY_PREFIX } from './app';
import { IngestBodySchema, IngestResultSchema } from './routes/ingest/schema';
import {
  ContradictionListSchema,
  ContradictionSchema,
  DocumentListSchema,
  DocumentSchema,
  ErrorSchema,
  HealthSchema,
  UploadSchema,
  VaultListSchema,
  VaultSchema,
} from './routes/responses';
import { SearchAnswerSchema, SearchBodySchema } from './routes/search/schema';
import { CreateVaultSchema, UpdateVaultSchema } from './routes/vaults/schema';

type Json = Record<string, unknown>;

const schema = (s: z.ZodType, io: 'input' | 'output' = 'output'): Json => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as Json;
  return rest;
};

const json = (s: z.ZodType, io: 'input' | 'output' = 'output') => ({ 'application/json': { schema: schema(s, io) } });

function op(summary: string, opts: { body?: z.ZodType; ok: number; response?: z.ZodType; okDescription?: string; extra?: Json }): Json {
  const responses: Json = {
    [opts.ok]: opts.response ? { description: opts.okDescription ?? 'OK', content: json(opts.response) } : { description: opts.okDescription ?? 'OK' },
    400: { description: 'invalid request', content: json(ErrorSchema) },
    401: { description: 'missing or invalid gateway identity', content: json(ErrorSchema) },
    404: { description: "not found, or another tenant's", content: json(ErrorSchema) },
  };
  return {
    summary,
    ...(opts.body ? { requestBody: { required: true, content: json(opts.body, 'input') } } : {}),
    responses,
    ...opts.extra,
  };
}

const idParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });

/** The OpenAPI 3.1 document of the memory routes, generated from the same zod schemas the handlers validate with. */
export function buildOpenApi(): Json {
  const p = (path: string) => `${MEMORY_PREFIX}${path}`;
  return {
    openapi: '3.1.0',
    info: { title: 'Lore memory API', version: '1.0.0', description: 'Memory data plane (graph service), reached through the gateway with x-api-key. See docs/memory.md.' },
    components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } } },
    security: [{ apiKey: [] }],
    paths: {
      [p('/ingest')]: { post: op('Ingest content (DLP, vault routing; indexing continues in the background)', { body: IngestBodySchema, ok: 200, response: IngestResultSchema }) },
      [p('/search')]: { post: op('Cited answer from hybrid retrieval', { body: SearchBodySchema, ok: 200, response: SearchAnswerSchema }) },
      [p('/search/stream')]: {
        post: op('Streamed cited answer: sources, tokens, done (server-sent events)', {
          body: SearchBodySchema,
          ok: 200,
          okDescription: 'text/event-stream of frames `sources`, `token`*, `done` (or `error`)',
        }),
      },
      [p('/uploads')]: {
        post: {
          ...op('Upload a file for background extraction and ingest', { ok: 202, response: UploadSchema, okDescription: 'accepted, status pending' }),
          requestBody: { required: true, content: { 'multipart/form-data': { schema: { type: 'object', properties: { file: { type: 'string', format: 'binary' } }, required: ['file'] } } } },
        },
      },
      [p('/uploads/{upload_id}')]: { get: op('Upload status', { ok: 200, response: UploadSchema, extra: { parameters: [idParam('upload_id')] } }) },
      [p('/documents')]: { get: op('List documents', { ok: 200, response: DocumentListSchema }) },
      [p('/documents/{doc_id}')]: {
        get: op('Document status', { ok: 200, response: DocumentSchema, extra: { parameters: [idParam('doc_id')] } }),
        delete: op('Delete a document', { ok: 204, okDescription: 'deleted', extra: { parameters: [idParam('doc_id')] } }),
      },
      [p('/vaults')]: {
        get: op('List vaults', { ok: 200, response: VaultListSchema }),
        post: op('Create a vault', { body: CreateVaultSchema, ok: 201, response: VaultSchema }),
      },
      [p('/vaults/{vault_id}')]: {
        get: op('A vault', { ok: 200, response: VaultSchema, extra: { parameters: [idParam('vault_id')] } }),
        patch: op('Change a vault', { body: UpdateVaultSchema, ok: 200, response: VaultSchema, extra: { parameters: [idParam('vault_id')] } }),
        delete: op('Delete a vault (its documents return to v_unassigned)', { ok: 200, response: z.object({ moved_documents: z.number().int() }), extra: { parameters: [idParam('vault_id')] } }),
      },
      [p('/review')]: { get: op('Review queue (documents in v_unassigned)', { ok: 200, response: DocumentListSchema }) },
      [p('/review/{doc_id}/file')]: {
        post: op('File a document into a vault', { body: z.object({ vault_id: z.string() }), ok: 200, response: DocumentSchema, extra: { parameters: [idParam('doc_id')] } }),
      },
      [p('/contradictions')]: { get: op('Contradictions between sources', { ok: 200, response: ContradictionListSchema }) },
      [p('/contradictions/{contradiction_id}/resolve')]: {
        post: op('Resolve a contradiction', {
          body: z.object({ resolution: z.enum(['keep_first', 'keep_second', 'both_valid', 'dismissed']), note: z.string().optional() }),
          ok: 200,
          response: ContradictionSchema,
          extra: { parameters: [idParam('contradiction_id')] },
        }),
      },
      [p('/health')]: { get: op('Memory health score with diagnostics', { ok: 200, response: HealthSchema }) },
      [p('/health/assess')]: { post: op('Assess and publish memory.health.assessed', { ok: 200, response: HealthSchema }) },
    },
  };
}
