-- Knowledge graphs (spec 2's departments and lists; docs/memory.md, "Knowledge graphs"). A graph belongs to a tenant,
-- not to one memory: it is reached through spec 2's /memory/* routes with any of the tenant's credentials. Its id is
-- both spec 2's `graph_id` and the `list_id` of the routes that fill it (upload, connector ingest, generate, chat).
--
-- Nodes are typed (`label`) and resolved by `resolution_key` (one Company per domain, one Person per profile URL or
-- name + company...; the keys are built in services/graph/src/domain/knowledge-graph.ts). Edges are bi-temporal:
-- `valid_from`/`valid_to` say when the fact held in the world as Lore learnt it (an open edge has `valid_to` NULL),
-- `recorded_at` when Lore wrote the row; a later ingest that no longer finds a fact closes its edge (sets
-- `valid_to`) instead of deleting it. Every edge names where it came from (`source_kind` document | row | cell,
-- `source_id`, `source_ref`) and the job that wrote it.

CREATE TABLE graph.knowledge_graphs (
  tenant_id text NOT NULL,
  graph_id text NOT NULL,
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  source_type text NOT NULL DEFAULT 'department',
  -- empty → building → ready | error (the last job failed; the nodes and edges are those from before it)
  status text NOT NULL DEFAULT 'empty' CHECK (status IN ('empty', 'building', 'ready', 'error')),
  message text,
  node_count integer NOT NULL DEFAULT 0,
  edge_count integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, graph_id)
);
CREATE INDEX knowledge_graphs_created_idx ON graph.knowledge_graphs (tenant_id, created_at DESC, graph_id);

-- Background jobs that fill a graph: queued → running → completed | failed. The `lore.graph.jobs` message (written
-- through the outbox in the same transaction as the row) names the job; the worker claims its event id in the
-- transaction that writes the job's nodes and edges, so a redelivery writes nothing twice.
CREATE TABLE graph.graph_jobs (
  tenant_id text NOT NULL,
  job_id text NOT NULL,
  graph_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('upload', 'connectors', 'generate')),
  status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  message text NOT NULL DEFAULT '',
  -- What the job reads: the upload's blob and file name, the connector sources and mode, the list's records.
  params jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- What it did: rows read, nodes created, edges opened and closed.
  stats jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz,
  PRIMARY KEY (tenant_id, job_id),
  FOREIGN KEY (tenant_id, graph_id) REFERENCES graph.knowledge_graphs (tenant_id, graph_id) ON DELETE CASCADE
);
CREATE INDEX graph_jobs_graph_idx ON graph.graph_jobs (tenant_id, graph_id, created_at DESC);

CREATE TABLE graph.kg_nodes (
  tenant_id text NOT NULL,
  graph_id text NOT NULL,
  node_id bigint GENERATED ALWAYS AS IDENTITY,
  label text NOT NULL CHECK (label IN ('Person', 'Company', 'Position', 'Location', 'ScanReport', 'Document')),
  -- The entity resolution key: `domain:acme.com`, `url:linkedin.com/in/jane`, `person:jane doe@acme.com`...
  resolution_key text NOT NULL,
  name text NOT NULL,
  properties jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Where the node was first seen (same shape as an edge's provenance).
  source_kind text NOT NULL CHECK (source_kind IN ('document', 'row', 'cell')),
  source_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, graph_id, node_id),
  UNIQUE (tenant_id, graph_id, label, resolution_key),
  FOREIGN KEY (tenant_id, graph_id) REFERENCES graph.knowledge_graphs (tenant_id, graph_id) ON DELETE CASCADE
);
-- Entity linking of a question's words to nodes (graph chat) and listing by label.
CREATE INDEX kg_nodes_name_idx ON graph.kg_nodes (tenant_id, graph_id, lower(name));

CREATE TABLE graph.kg_edges (
  tenant_id text NOT NULL,
  graph_id text NOT NULL,
  edge_id bigint GENERATED ALWAYS AS IDENTITY,
  from_node bigint NOT NULL,
  to_node bigint NOT NULL,
  -- WORKS_AT, HOLDS_POSITION, POSITION_AT, LOCATED_IN, DESCRIBES, MENTIONS
  label text NOT NULL,
  properties jsonb NOT NULL DEFAULT '{}'::jsonb,
  valid_from timestamptz NOT NULL DEFAULT now(),
  valid_to timestamptz,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  -- Provenance: a connector document (`source_id` its doc_id), a row of an uploaded file (`<job_id>:<row number>`) or
  -- a cell of a list (`<record id>:<column id>`); `source_ref` holds the rest (file name, column, external id...).
  source_kind text NOT NULL CHECK (source_kind IN ('document', 'row', 'cell')),
  source_id text NOT NULL,
  source_ref jsonb NOT NULL DEFAULT '{}'::jsonb,
  job_id text NOT NULL,
  PRIMARY KEY (tenant_id, graph_id, edge_id),
  CHECK (valid_to IS NULL OR valid_to >= valid_from),
  FOREIGN KEY (tenant_id, graph_id, from_node) REFERENCES graph.kg_nodes (tenant_id, graph_id, node_id) ON DELETE CASCADE,
  FOREIGN KEY (tenant_id, graph_id, to_node) REFERENCES graph.kg_nodes (tenant_id, graph_id, node_id) ON DELETE CASCADE
);
-- One open edge per fact and source: the same fact from the same source again changes nothing.
CREATE UNIQUE INDEX kg_edges_open_fact_idx ON graph.kg_edges (tenant_id, graph_id, from_node, label, to_node, source_kind, source_id) WHERE valid_to IS NULL;
-- Traversal from either end (graph chat's neighbourhood), current facts first.
CREATE INDEX kg_edges_from_idx ON graph.kg_edges (tenant_id, graph_id, from_node) INCLUDE (to_node, label) WHERE valid_to IS NULL;
CREATE INDEX kg_edges_to_idx ON graph.kg_edges (tenant_id, graph_id, to_node) INCLUDE (from_node, label) WHERE valid_to IS NULL;
-- An incremental ingest closes what one source no longer says.
CREATE INDEX kg_edges_source_idx ON graph.kg_edges (tenant_id, graph_id, source_kind, source_id) WHERE valid_to IS NULL;

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['knowledge_graphs', 'graph_jobs', 'kg_nodes', 'kg_edges'] LOOP
    EXECUTE format('ALTER TABLE graph.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE graph.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY tenant_isolation ON graph.%I USING (tenant_id = current_setting(''lore.tenant_id'', true)) '
      'WITH CHECK (tenant_id = current_setting(''lore.tenant_id'', true))', t);
  END LOOP;
END $$;
