-- Every embedding records the model that made it, and vector search compares a query only with chunks embedded by
-- the same model: the embedder can change (the local model fetched after a start with the hashed embedder, an
-- OpenAI-compatible provider configured later) without mixing vector spaces of the same dimension. Chunks embedded
-- before this migration have no model and take part in full-text search only (re-ingest to give them vectors).
ALTER TABLE graph.chunks ADD COLUMN IF NOT EXISTS embedding_model text;
