-- Runs after the numbered migrations on every migration run. The embedding column exists only where pgvector did
-- when a migration looked (0001, 0003); a database administrator may create the extension later (docs/install.md),
-- so every run adds the column and its HNSW index once the extension is there. The type is written qualified with
-- the extension's schema, wherever it is.
DO $$
DECLARE ns text;
BEGIN
  SELECT n.nspname INTO ns FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector';
  IF ns IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM information_schema.columns WHERE table_schema = 'graph' AND table_name = 'chunks' AND column_name = 'embedding'
  ) THEN
    EXECUTE format('ALTER TABLE graph.chunks ADD COLUMN embedding %I.vector', ns);
    EXECUTE 'ALTER TABLE graph.chunks ADD COLUMN IF NOT EXISTS embedding_dims integer';
    EXECUTE format('CREATE INDEX chunks_embedding_384_idx ON graph.chunks USING hnsw ((embedding::%I.vector(384)) %I.vector_cosine_ops) WHERE embedding_dims = 384', ns, ns);
  END IF;
END $$;
