-- A pair's write lease (docs/core.md, "Indexing"): the attempt writing to or removing from the pair's memory right
-- now, and when it last said so. A run takes it, under the pair's row lock, only while its attempt is live, and keeps
-- it until the graph answered; the deletion takes it too before it removes the pair's documents. So a canceled run
-- never writes after the deletion removed what the pair had, and a resumed pair's new run never writes beside the
-- canceled one. A lease its holder stopped renewing for the stale time (a killed worker) is free again.
ALTER TABLE core.cc_pairs ADD COLUMN writer_attempt_id integer;
ALTER TABLE core.cc_pairs ADD COLUMN writer_seen_at timestamptz;
