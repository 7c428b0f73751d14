-- A node's deletion (a graph deleted, a memory's erasure) cascades to the facts that name it: PostgreSQL looks them up
-- by (tenant, graph, from_node) and by (tenant, graph, to_node), with no condition on `valid_to`. The partial indexes
-- of 0008 (open facts) and 0010 (closed facts) cannot serve that look-up, so each deleted node scanned every fact of
-- the table: deleting a graph of 100,000 rows never finished, and embedded mode's one database connection held every
-- request of every tenant meanwhile. One index of every fact by each end serves the cascade; it also serves the
-- look-ups of closed facts (graph chat's history), so 0010's two partial indexes of closed facts are dropped for it.
CREATE INDEX kg_edges_from_all_idx ON graph.kg_edges (tenant_id, graph_id, from_node);
CREATE INDEX kg_edges_to_all_idx ON graph.kg_edges (tenant_id, graph_id, to_node);
DROP INDEX graph.kg_edges_closed_from_idx;
DROP INDEX graph.kg_edges_closed_to_idx;
