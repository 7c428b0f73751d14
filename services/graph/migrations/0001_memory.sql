-- The memory data plane. Every table is tenant-owned: tenant_id on every row, row-level security enabled AND
-- forced, one policy on the `lore.tenant_id` setting that `Db.withTenant` sets per transaction.

CREATE TABLE graph.memories (
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_health_at timestamptz,
  PRIMARY KEY (tenant_id, memory_id)
);

CREATE TABLE graph.vaults (
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  vault_id text NOT NULL,
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  examples jsonb NOT NULL DEFAULT '[]'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, memory_id, vault_id),
  FOREIGN KEY (tenant_id, memory_id) REFERENCES graph.memories (tenant_id, memory_id) ON DELETE CASCADE
);

CREATE TABLE graph.uploads (
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  workspace_id text NOT NULL,
  upload_id text NOT NULL,
  filename text NOT NULL,
  content_type text NOT NULL,
  size_bytes bigint NOT NULL,
  blob_key text NOT NULL,
  -- pending → extracting → indexing → completed | failed
  status text NOT NULL DEFAULT 'pending',
  extractor text,
  ocr boolean NOT NULL DEFAULT false,
  doc_id text,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, upload_id)
);

CREATE TABLE graph.documents (
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  workspace_id text NOT NULL,
  doc_id text NOT NULL,
  vault_id text NOT NULL,
  title text NOT NULL,
  content_type text NOT NULL,
  -- Masked content: DLP ran before this row was written; the original never reaches the database.
  content text NOT NULL,
  content_sha256 text NOT NULL,
  source text NOT NULL DEFAULT 'ingest',
  upload_id text,
  routing_mode text NOT NULL,
  routing_confidence real NOT NULL,
  routing_scores jsonb NOT NULL DEFAULT '[]'::jsonb,
  needs_review boolean NOT NULL,
  dlp_matches integer NOT NULL DEFAULT 0,
  dlp_kinds jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- queued → indexed | failed
  status text NOT NULL DEFAULT 'queued',
  chunk_count integer NOT NULL DEFAULT 0,
  entity_count integer NOT NULL DEFAULT 0,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  indexed_at timestamptz,
  PRIMARY KEY (tenant_id, doc_id),
  FOREIGN KEY (tenant_id, memory_id) REFERENCES graph.memories (tenant_id, memory_id) ON DELETE CASCADE
);
CREATE INDEX documents_vault_idx ON graph.documents (tenant_id, memory_id, vault_id, created_at DESC);
CREATE INDEX documents_review_idx ON graph.documents (tenant_id, memory_id, created_at) WHERE needs_review;
CREATE INDEX documents_sha_idx ON graph.documents (tenant_id, memory_id, content_sha256);

-- Retrieval units. `tsv` is PostgreSQL's English analysis of title + text; `dl` its length in positions (BM25).
CREATE TABLE graph.chunks (
  chunk_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  doc_id text NOT NULL,
  vault_id text NOT NULL,
  ord integer NOT NULL,
  heading text,
  content text NOT NULL,
  tsv tsvector NOT NULL,
  dl integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, doc_id, ord),
  FOREIGN KEY (tenant_id, doc_id) REFERENCES graph.documents (tenant_id, doc_id) ON DELETE CASCADE
);

-- The inverted index of `chunks.tsv`, one row per (lexeme, chunk). Under forced row-level security the planner
-- may not use an index for a non-leakproof operator such as `@@` (the tenant policy must filter first), so a GIN
-- index on tsv would be bypassed for every tenant query. Equality on text IS leakproof: this btree serves both
-- the policy's tenant_id and the query's lexemes as index conditions, and the INCLUDEd tf and dl make BM25 an
-- index-only scan. (Measured in bench/memory/search-rls.ts.)
CREATE TABLE graph.postings (
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  term text NOT NULL,
  chunk_id bigint NOT NULL REFERENCES graph.chunks (chunk_id) ON DELETE CASCADE,
  tf smallint NOT NULL,
  dl integer NOT NULL,
  PRIMARY KEY (tenant_id, memory_id, term, chunk_id) INCLUDE (tf, dl)
);
CREATE INDEX postings_chunk_idx ON graph.postings (chunk_id);

-- Collection statistics for BM25, maintained by the worker in the indexing transaction.
CREATE TABLE graph.term_stats (
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  term text NOT NULL,
  df integer NOT NULL,
  PRIMARY KEY (tenant_id, memory_id, term)
);
CREATE TABLE graph.corpus_stats (
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  chunk_count bigint NOT NULL DEFAULT 0,
  total_dl bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, memory_id)
);

CREATE TABLE graph.entities (
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  entity_key text NOT NULL,
  entity_id text NOT NULL,
  name text NOT NULL,
  kind text NOT NULL,
  mention_count integer NOT NULL DEFAULT 0,
  first_doc_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, memory_id, entity_key)
);

CREATE TABLE graph.entity_mentions (
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  entity_key text NOT NULL,
  doc_id text NOT NULL,
  mentions integer NOT NULL,
  PRIMARY KEY (tenant_id, memory_id, entity_key, doc_id),
  FOREIGN KEY (tenant_id, doc_id) REFERENCES graph.documents (tenant_id, doc_id) ON DELETE CASCADE
);
CREATE INDEX entity_mentions_doc_idx ON graph.entity_mentions (tenant_id, doc_id);

CREATE TABLE graph.facts (
  fact_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  entity_key text NOT NULL,
  entity_name text NOT NULL,
  attribute text NOT NULL,
  value text NOT NULL,
  value_norm text NOT NULL,
  doc_id text NOT NULL,
  chunk_ord integer NOT NULL,
  sentence text NOT NULL,
  FOREIGN KEY (tenant_id, doc_id) REFERENCES graph.documents (tenant_id, doc_id) ON DELETE CASCADE
);
CREATE INDEX facts_subject_idx ON graph.facts (tenant_id, memory_id, entity_key, attribute);
CREATE INDEX facts_doc_idx ON graph.facts (tenant_id, doc_id);

CREATE TABLE graph.contradictions (
  tenant_id text NOT NULL,
  memory_id text NOT NULL,
  workspace_id text NOT NULL,
  contradiction_id text NOT NULL,
  entity_key text NOT NULL,
  entity_name text NOT NULL,
  attribute text NOT NULL,
  doc_a text NOT NULL,
  value_a text NOT NULL,
  sentence_a text NOT NULL,
  doc_b text NOT NULL,
  value_b text NOT NULL,
  sentence_b text NOT NULL,
  -- open → resolved
  status text NOT NULL DEFAULT 'open',
  resolution text,
  kept_doc_id text,
  note text,
  detected_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz,
  PRIMARY KEY (tenant_id, contradiction_id),
  UNIQUE (tenant_id, memory_id, entity_key, attribute, doc_a, doc_b)
);
CREATE INDEX contradictions_open_idx ON graph.contradictions (tenant_id, memory_id, detected_at DESC) WHERE status = 'open';

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['memories', 'vaults', 'uploads', 'documents', 'chunks', 'postings', 'term_stats',
                           'corpus_stats', 'entities', 'entity_mentions', 'facts', 'contradictions'] LOOP
    EXECUTE format('ALTER TABLE graph.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE graph.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY tenant_isolation ON graph.%I USING (tenant_id = current_setting(''lore.tenant_id'', true)) '
      'WITH CHECK (tenant_id = current_setting(''lore.tenant_id'', true))', t);
  END LOOP;
END $$;

-- Vectors only where pgvector is installed (Debian's PostgreSQL may lack it; search then runs lexical-only).
-- The column has no fixed dimension so the embedder can change; the HNSW index covers the default embedders'
-- 384 dimensions through an expression index, and `embedding_dims` lets a query select comparable rows.
DO $$
DECLARE ns text;
BEGIN
  SELECT n.nspname INTO ns FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector';
  IF ns IS NOT NULL THEN
    EXECUTE format('ALTER TABLE graph.chunks ADD COLUMN embedding %I.vector', ns);
    EXECUTE 'ALTER TABLE graph.chunks ADD COLUMN embedding_dims integer';
    EXECUTE format('CREATE INDEX chunks_embedding_384_idx ON graph.chunks USING hnsw ((embedding::%I.vector(384)) %I.vector_cosine_ops) WHERE embedding_dims = 384', ns, ns);
  END IF;
END $$;
