import { z } from 'zod';
import { additive, checkFile, defineRoute, serverTools, filePart, open, read, seg, text, type FileArgs } from './route-tools';

/**
 * Spec 3's memory-graph tools, over spec 2's knowledge-graph routes at MEMORY_URL (docs/mcp.md, "Memory graph").
 * Argument names are snake_case throughout; the routes' own camelCase (`listId`) is applied when the body is made.
 */

/** The largest CSV `memory_upload_data` takes as text (the graph service reads larger files from a direct upload). */
export const MAX_UPLOAD_CSV_BYTES = 5 * 1024 * 1024;
/** At most this many records (and columns) go to `memory_generate` in one call. */
export const MAX_GENERATE_RECORDS = 5_000;
export const MAX_GENERATE_COLUMNS = 200;

const graphId = () => text(128).describe('the graph id (`graph_id`, called `list_id` on the routes that fill or ask it)');

const graph = open({
  graph_id: z.string(),
  name: z.string(),
  description: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  node_count: z.number(),
  edge_count: z.number(),
  source_type: z.string(),
  status: z.string(),
});
const job = open({ jobId: z.string(), status: z.string(), message: z.string() });

const cell = z.looseObject({
  value: z.union([z.string(), z.number(), z.boolean(), z.null()]).optional(),
  status: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  expandable: z.boolean().optional(),
  _id: z.string().optional(),
});

export const memoryGraphRoutes = [
  defineRoute({
    name: 'memory_list_departments',
    description: 'List the tenant\'s knowledge graphs (departments and lists), newest first.',
    module: 'graph',
    write: false,
    input: {},
    data: open({ departments: z.array(graph) }),
    annotations: read('List knowledge graphs'),
    request: () => ({ base: 'memory', method: 'GET', path: '/memory/departments' }),
  }),
  defineRoute({
    name: 'memory_get_department',
    description: 'One knowledge graph: its name, status (empty, building, ready, error) and node and edge counts.',
    module: 'graph',
    write: false,
    input: { graph_id: graphId() },
    data: graph,
    annotations: read('Get a knowledge graph'),
    request: (a) => ({ base: 'memory', method: 'GET', path: `/memory/departments/${seg(a.graph_id)}` }),
  }),
  defineRoute({
    name: 'memory_create_department',
    description: 'Create an empty knowledge graph; fill it with memory_upload_data, memory_ingest_connectors or memory_generate.',
    module: 'graph',
    write: true,
    input: {
      name: text(200),
      description: text(2_000).optional(),
      source_type: text(100).optional().describe('for example department (the default) or list'),
    },
    data: graph.extend({ tenant_id: z.string(), list_id: z.string() }),
    annotations: additive('Create a knowledge graph'),
    request: (a) => ({ base: 'memory', method: 'POST', path: '/memory/departments/create', json: { name: a.name, description: a.description, source_type: a.source_type } }),
  }),
  defineRoute({
    name: 'memory_upload_data',
    description:
      `Fill a knowledge graph from a CSV table given as text (at most ${MAX_UPLOAD_CSV_BYTES} bytes; never a URL). Answers a background job; the graph reads \`building\`, then \`ready\`.`,
    module: 'graph',
    write: true,
    input: {
      list_id: graphId(),
      csv: z.string().min(1, 'must not be empty').max(MAX_UPLOAD_CSV_BYTES, `at most ${MAX_UPLOAD_CSV_BYTES} characters`).describe('the table, header row first'),
      file_name: text(255).optional().describe('the name the upload declares (default data.csv)'),
    },
    refine: (a, ctx) => checkFile(csvFile(a), MAX_UPLOAD_CSV_BYTES, ctx),
    data: job,
    annotations: additive('Upload a table to a knowledge graph'),
    request: (a) => ({ base: 'memory', method: 'POST', path: '/memory/upload', multipart: { fields: { list_id: a.list_id }, files: [filePart('file', csvFile(a))] } }),
  }),
  defineRoute({
    name: 'memory_ingest_connectors',
    description: 'Fill a knowledge graph from the documents the tenant\'s connectors indexed (all sources, or the named ones). Answers a background job.',
    module: 'graph',
    write: true,
    input: {
      list_id: graphId(),
      source_types: z.array(text(100)).min(1).max(100).nullable().optional().describe('connector sources (enterprise_get_connector_status lists them); absent or null: every source'),
      mode: z.enum(['full', 'incremental']).optional().describe('full (the default) reads every document; incremental only what changed'),
      graph_name: text(200).optional().describe('when set and the graph does not exist, it is created with this name'),
    },
    data: job,
    annotations: additive('Ingest connector documents into a knowledge graph'),
    request: (a) => ({
      base: 'memory', method: 'POST', path: '/memory/ingest/connectors',
      json: { list_id: a.list_id, source_types: a.source_types ?? null, mode: a.mode, graph_name: a.graph_name },
    }),
  }),
  defineRoute({
    name: 'memory_generate',
    description: 'Build a knowledge graph from a saved search list\'s records and columns (get_search_results gives them). Answers a background job.',
    module: 'graph',
    write: true,
    input: {
      list_id: graphId(),
      workflow_category: text(200).optional().describe('the kind of list (for example company search); names the graph when this call creates it (default: the list id)'),
      records: z
        .array(z.looseObject({ cells: z.record(z.string(), cell.nullable()), step_source: z.string().optional(), metadata: z.record(z.string(), z.unknown()).optional(), id: z.string().optional() }))
        .min(1)
        .max(MAX_GENERATE_RECORDS),
      columns: z.array(z.looseObject({ id: text(200), header: text(200), type: text(100) })).min(1).max(MAX_GENERATE_COLUMNS),
    },
    data: job,
    annotations: additive('Generate a knowledge graph from a list'),
    request: (a) => ({
      base: 'memory', method: 'POST', path: '/memory/generate',
      json: { listId: a.list_id, workflowCategory: a.workflow_category, records: a.records, columns: a.columns },
    }),
  }),
  defineRoute({
    name: 'memory_chat',
    description: 'Ask a knowledge graph a question: the answer and the nodes and edges it comes from.',
    module: 'graph',
    write: false,
    input: { list_id: graphId(), question: text(2_000) },
    data: open({
      answer: z.string(),
      nodes: z.array(open({ id: z.string(), label: z.string(), properties: z.record(z.string(), z.unknown()) })),
      edges: z.array(open({ from: z.string(), to: z.string(), label: z.string() })),
    }),
    annotations: read('Ask a knowledge graph'),
    request: (a) => ({ base: 'memory', method: 'POST', path: '/memory/chat', json: { listId: a.list_id, question: a.question } }),
  }),
];

function csvFile(a: { csv: string; file_name?: string }): FileArgs {
  return { file_name: a.file_name ?? 'data.csv', content: a.csv, content_type: 'text/csv' };
}

/** The tools as the server registers them. */
export const memoryGraphTools = serverTools(memoryGraphRoutes);
