-- The retention sweep (migration 0103) deletes the settled deliveries it picked by their ids, as an array. Its
-- delete used to be joined to the picked rows, and the planner, when the table's statistics were stale (a table
-- whose deliveries were swept and refilled since its last ANALYZE), made the picked rows the inner side of a nested
-- loop over every settled delivery: a sweep of 1,000 read each settled delivery about once per picked row (8,000
-- deliveries swept in sweeps of 1,000 read 36 million rows). By id, each picked row is one read of the primary key.
-- The conditions are still checked again on each row as it is deleted, so a dead letter replayed meanwhile is kept.
CREATE OR REPLACE FUNCTION gateway.prune_webhook_deliveries(p_retention interval, p_limit integer)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  WITH gone AS (
    DELETE FROM gateway.webhook_deliveries d
     WHERE d.id = ANY (ARRAY(
             SELECT o.id
               FROM gateway.webhook_deliveries o
              WHERE o.status IN ('succeeded', 'dead') AND o.updated_at < now() - p_retention
              ORDER BY o.updated_at
              LIMIT least(greatest(p_limit, 1), 10000)))
       AND d.status IN ('succeeded', 'dead') AND d.updated_at < now() - p_retention
    RETURNING 1
  )
  SELECT count(*) FROM gone
$$;

REVOKE ALL ON FUNCTION gateway.prune_webhook_deliveries(interval, integer) FROM PUBLIC;
