-- pgvector belongs in schema public, where the application role resolves the type and its operators with its
-- default search_path ("$user", public) as the stores' SQL does. Before this migration 0003 created the extension
-- with search_path graph, public, so on those installs it sits in schema graph and every vector query fails with
-- `type "vector" does not exist`. Move it: pgvector is relocatable, and columns and indexes refer to its type by
-- oid, so the embeddings and the HNSW index stay as they are. An extension a database administrator put in another
-- schema on purpose is left where it is (the graph service checks at start that the application role can use it).
DO $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector' AND n.nspname = 'graph'
  ) THEN
    BEGIN
      ALTER EXTENSION vector SET SCHEMA public;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE EXCEPTION 'pgvector is in schema graph and the migrations'' role may not move it (%): as a superuser run ALTER EXTENSION vector SET SCHEMA public, then run the migrations again', SQLERRM;
    END;
  END IF;
END $$;
