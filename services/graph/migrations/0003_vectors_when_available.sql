-- Vectors whenever the server can have them: create pgvector if it is installed and the owner may create it,
-- and add the embedding column if pgvector arrived after 0001 ran. Where neither is possible, search stays
-- lexical-only (the service says so at start and in /readyz). The extension goes in schema public, where the
-- application role resolves `vector` and `<=>` with its default search_path ("$user", public): migrations run with
-- search_path graph, public, and an unqualified CREATE EXTENSION would have put it in graph (0006 moves it there
-- from graph on installs that ran the earlier text of this file).
DO $$
DECLARE ns text;
BEGIN
  BEGIN
    CREATE EXTENSION IF NOT EXISTS vector SCHEMA public;
  EXCEPTION WHEN undefined_file OR insufficient_privilege OR feature_not_supported THEN
    RAISE NOTICE 'pgvector is not available here: memory search stays lexical-only';
  END;
  SELECT n.nspname INTO ns FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector';
  IF ns IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM information_schema.columns WHERE table_schema = 'graph' AND table_name = 'chunks' AND column_name = 'embedding'
  ) THEN
    EXECUTE format('ALTER TABLE graph.chunks ADD COLUMN embedding %I.vector', ns);
    EXECUTE 'ALTER TABLE graph.chunks ADD COLUMN embedding_dims integer';
    EXECUTE format('CREATE INDEX chunks_embedding_384_idx ON graph.chunks USING hnsw ((embedding::%I.vector(384)) %I.vector_cosine_ops) WHERE embedding_dims = 384', ns, ns);
  END IF;
END $$;
