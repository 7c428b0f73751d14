-- Impact-ordered postings. The BM25 contribution of a posting without its idf, tf·(k1+1)/(tf + k1·(1−b+b·dl/avgdl)),
-- is stored at indexing time (avgdl of the memory at that moment) and indexed in descending order per term, so a
-- query reads only the strongest postings of each term (a bounded LIMIT) instead of every posting of a common
-- word. Still equality-only predicates: the index stays usable under row-level security.
ALTER TABLE graph.postings ADD COLUMN impact real NOT NULL DEFAULT 0;

-- Backfill as the owner; forced row-level security would hide every row from it, so it is lifted for the
-- duration of this transaction only.
ALTER TABLE graph.postings NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.corpus_stats NO FORCE ROW LEVEL SECURITY;
UPDATE graph.postings p
   SET impact = p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.dl / greatest(1.0, s.total_dl::float8 / greatest(s.chunk_count, 1))))
  FROM graph.corpus_stats s
 WHERE s.tenant_id = p.tenant_id AND s.memory_id = p.memory_id;
ALTER TABLE graph.postings FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.corpus_stats FORCE ROW LEVEL SECURITY;

-- One row per (lexeme, chunk) holds by construction (they come from unnest(tsvector)); the impact index replaces
-- the primary key as the access path.
ALTER TABLE graph.postings DROP CONSTRAINT postings_pkey;
CREATE INDEX postings_impact_idx ON graph.postings (tenant_id, memory_id, term, impact DESC) INCLUDE (chunk_id);
