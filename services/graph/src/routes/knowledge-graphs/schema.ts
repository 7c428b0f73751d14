import { CONNECTOR_SOURCES } from '@lore/contracts';
import { detailValidationView } from '@lore/runtime';
import { z } from 'zod';
import type { JobAnswer, JobView } from '../../application/knowledge-graphs';
import { GRAPH_LIMITS } from '../../application/knowledge-graphs';
import type { GraphRow } from '../../store/knowledge-graphs';

/** Spec 2's knowledge-graph (department) fields, plus `message` (why the last job failed, when it did). */
export const GraphSchema = z.object({
  graph_id: z.string().describe('the graph\'s id; the `list_id` (`listId`) of the routes that fill or ask it'),
  name: z.string(),
  description: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  node_count: z.number().int(),
  edge_count: z.number().int().describe('current (open) edges'),
  source_type: z.string(),
  status: z.enum(['empty', 'building', 'ready', 'error']).describe('empty → building → ready, or error when the last job failed (nodes and edges as before it)'),
  message: z.string().nullable().describe('why the last job failed, while the status is `error`'),
});

export const CreatedGraphSchema = GraphSchema.extend({ tenant_id: z.string(), list_id: z.string() });
export const GraphListSchema = z.object({ departments: z.array(GraphSchema) });

export const CreateGraphBody = z.object({
  name: z.string().trim().min(1).max(200),
  description: z.string().max(2_000).optional(),
  source_type: z.string().trim().min(1).max(100).optional(),
});

const SOURCE_NAMES = CONNECTOR_SOURCES.join(', ');

export const ConnectorIngestBody = z.object({
  list_id: z.string().min(1).max(128),
  source_types: z
    .array(z.enum(CONNECTOR_SOURCES, { error: (issue) => `${JSON.stringify(String(issue.input).slice(0, 100))} is not a connector source: the sources are ${SOURCE_NAMES}` }))
    .min(1, 'name at least one source, or null for every source')
    .max(100)
    .nullable()
    .describe(`required: the connector sources to read (${SOURCE_NAMES}; an unknown one is 422), or null for every source`),
  mode: z.enum(['full', 'incremental']).default('full'),
  graph_name: z.string().trim().min(1).max(200).optional().describe('when set and the tenant has no graph `list_id`, one is created with this name'),
});

const CellBody = z
  .object({
    value: z.union([z.string().max(GRAPH_LIMITS.maxFieldChars), z.number(), z.boolean(), z.null()]).optional(),
    status: z.string().max(100).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    expandable: z.boolean().optional(),
    _id: z.string().max(200).optional(),
  })
  .passthrough();

/** The longest column id generate takes (a cell's key is a column id). */
const MAX_COLUMN_ID = 200;
const COLUMN_ID_TOO_LONG = `a column id is at most ${MAX_COLUMN_ID} characters`;
const CELL_KEY_TOO_LONG = `a cell's key is a column id, at most ${MAX_COLUMN_ID} characters`;

export const GenerateBody = z.object({
  listId: z.string().min(1).max(128).describe('the graph id (created, source type `list`, when the tenant has none)'),
  workflowCategory: z.string().max(200).optional(),
  records: z
    .array(
      z
        .object({
          // A key too long is named by the limit it breaks (zod's own word for any bad key is "Invalid key in record").
          cells: z
            .record(z.string().max(MAX_COLUMN_ID), CellBody.nullable(), { error: (issue) => (issue.code === 'invalid_key' ? CELL_KEY_TOO_LONG : undefined) })
            .refine((c) => Object.keys(c).length <= GRAPH_LIMITS.maxColumns, `at most ${GRAPH_LIMITS.maxColumns} cells`),
          step_source: z.string().max(200).optional(),
          // A saved list's row names its source as a word, as the provenance object the agents' status route gives
          // (`{source, source_url, snippet, fetched_at}`), or null when it has none; null ids are the same as absent.
          metadata: z
            .object({
              source: z.union([z.string().max(200), z.record(z.string(), z.unknown())]).nullish(),
              _id: z.string().max(200).nullish(),
              uniqueID: z.string().max(200).nullish(),
            })
            .passthrough()
            .optional(),
          id: z.string().max(200).optional(),
        })
        .passthrough(),
    )
    .max(GRAPH_LIMITS.maxRecords),
  columns: z
    .array(
      z.object({
        id: z.string().min(1).max(MAX_COLUMN_ID, COLUMN_ID_TOO_LONG),
        header: z.string().max(200, 'a column header is at most 200 characters'),
        type: z.string().min(1).max(100).describe('`fixed` (the entity\'s own fields) or `dynamic` (criteria, enrichment)'),
      }).passthrough(),
    )
    .min(1)
    .max(GRAPH_LIMITS.maxColumns),
});

export const JobAnswerSchema = z.object({ jobId: z.string(), status: z.string().describe('`queued`'), message: z.string() });

export const JobSchema = z.object({
  jobId: z.string(),
  job_id: z.string(),
  status: z.enum(['queued', 'running', 'completed', 'failed']),
  message: z.string().describe('what the job did, or why it failed'),
  kind: z.enum(['upload', 'connectors', 'generate']),
  graph_id: z.string(),
  list_id: z.string(),
  stats: z.record(z.string(), z.unknown()).describe('rows read, nodes created, edges opened and closed, the graph\'s counts after'),
  created_at: z.string(),
  updated_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});

/** The multipart body of `POST /memory/upload`, for the document. */
export const GRAPH_UPLOAD_BODY = {
  'multipart/form-data': {
    schema: {
      type: 'object',
      properties: {
        file: {
          type: 'string',
          format: 'binary',
          description: `a table: CSV (or tab, semicolon or pipe separated), UTF-8, a header line, at most ${GRAPH_LIMITS.maxRows} rows and ${GRAPH_LIMITS.maxColumns} columns; the one file part of the body (a file part of another name is 422)`,
        },
        list_id: { type: 'string', description: 'the graph to fill (a text field, taken as sent)' },
      },
      required: ['file', 'list_id'],
    },
  },
};

export const detailStringView = z.object({ detail: z.string() });
export const validationView = detailValidationView;

export function presentGraph(g: GraphRow): z.input<typeof GraphSchema> {
  return {
    graph_id: g.graph_id,
    name: g.name,
    description: g.description,
    created_at: g.created_at,
    updated_at: g.updated_at,
    node_count: g.node_count,
    edge_count: g.edge_count,
    source_type: g.source_type,
    status: g.status,
    message: g.message,
  };
}

export const presentJobAnswer = (j: JobAnswer): z.input<typeof JobAnswerSchema> => j;
export const presentJob = (j: JobView): z.input<typeof JobSchema> => j;
