-- Documents a connector of core's (web, file, Google Drive) pushes into the memory through the graph-internal
-- routes `/internal/v1/connector-documents` (docs/memory.md, "Connector documents (graph-internal)"). Such a row has
-- `source` 'connector' and names its origin: the connector–credential pair (`cc_pair_id`, core's id) and the
-- source's own id of the document (`external_id`: a URL, a file location, a Drive file id). Every column is
-- nullable or has a constant default, so the ALTER rewrites no row (the CHECK reads each once).
--   source_type        the connector's kind (web, file, google_drive...)
--   link               where the document lives at its source
--   primary_owners     the source's owners and other people with a claim on it (JSON arrays of strings)
--   secondary_owners
--   doc_metadata       the source's string attributes (JSON object of strings)
--   source_updated_at  when the source last changed it (retrieval shows it instead of the row's updated_at)
--   connector_hash     the connector's hash of what it read: the same hash again means nothing to re-index
--   access_public      false: only administrators see the document (retrieval, search, document routes)
--   access_groups      the source's groups that may see it; stored for when Lore has user groups
ALTER TABLE graph.documents
  ADD COLUMN cc_pair_id integer,
  ADD COLUMN external_id text,
  ADD COLUMN source_type text,
  ADD COLUMN link text,
  ADD COLUMN primary_owners jsonb,
  ADD COLUMN secondary_owners jsonb,
  ADD COLUMN doc_metadata jsonb,
  ADD COLUMN source_updated_at timestamptz,
  ADD COLUMN connector_hash text,
  ADD COLUMN access_public boolean NOT NULL DEFAULT true,
  ADD COLUMN access_groups integer[] NOT NULL DEFAULT '{}',
  ADD CONSTRAINT documents_connector_origin CHECK ((cc_pair_id IS NULL) = (external_id IS NULL));

-- One document per source document and pair in a memory, whoever pushes it and however concurrently: the second of
-- two racing inserts fails here and is retried as an update. It is also the upsert's and the pair deletion's
-- access path.
CREATE UNIQUE INDEX documents_connector_idx ON graph.documents (tenant_id, memory_id, cc_pair_id, external_id) WHERE cc_pair_id IS NOT NULL;

-- "Does this memory hold any document that is not public?": asked before every retrieval by a caller who is not an
-- administrator, answered by one probe of this (usually empty) partial index. Memories without private documents
-- then search exactly as before.
CREATE INDEX documents_private_idx ON graph.documents (tenant_id, memory_id) WHERE NOT access_public;
