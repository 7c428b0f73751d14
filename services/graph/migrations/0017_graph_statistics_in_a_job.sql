-- Planner statistics of the knowledge-graph tables, gathered inside a graph job's transaction when the planner
-- does not know the graph the job writes (docs/memory.md, "Knowledge graphs", planner statistics). A job writes its
-- nodes in batches inside one transaction; until an ANALYZE has seen a graph, the planner takes "this tenant and
-- this graph" for one row, cannot tell the nodes' primary key (tenant, graph, node id) from the (tenant, graph,
-- label, resolution key) index, and may read every node of the graph for each node a batch looks up: 10 s for 5,000
-- nodes, with the graph's row locked. That is a fresh install's first upload, and a new tenant's first one in tables
-- whose statistics know only other tenants. Autovacuum cannot help: it sees committed rows only, after the job.
--
-- The application role may not ANALYZE (only the tables' owner may): this function does it for it, as the owner.
-- ANALYZE inside the job's transaction samples the rows the job wrote so far. It holds the tables' SHARE UPDATE
-- EXCLUSIVE lock until the job ends, so another job's call does not wait for it: it gives up (false) and runs
-- without, as before. Autovacuum skips tables it cannot lock and comes back later.
CREATE FUNCTION graph.kg_gather_statistics()
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  BEGIN
    LOCK TABLE graph.kg_nodes, graph.kg_node_keys, graph.kg_edges IN SHARE UPDATE EXCLUSIVE MODE NOWAIT;
  EXCEPTION WHEN lock_not_available THEN
    RETURN false;
  END;
  ANALYZE graph.kg_nodes, graph.kg_node_keys, graph.kg_edges;
  RETURN true;
END
$fn$;

-- Only the application role (granted EXECUTE on the schema's functions by every migration run) may call it.
REVOKE ALL ON FUNCTION graph.kg_gather_statistics() FROM PUBLIC;
