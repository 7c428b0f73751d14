-- Foreign-key checks against knowledge-graph nodes that stay one index probe however a graph grows
-- (docs/memory.md, "Knowledge graphs", Schema). Every check of a key referencing kg_nodes (an edge's two ends,
-- 0010's node keys) runs a plan PostgreSQL prepares once per connection; prepared while kg_nodes was empty, it
-- chose any index starting with (tenant_id, graph_id) — the name index, the resolution-key index — and filtered
-- node_id, i.e. read every node of the graph for every check: bench/memory/csv-to-graph.ts measured about 1 ms a
-- check at a few thousand nodes, 6-12 s for one batch of 6,000 edges whose insert alone took 0.08 s. A unique
-- index on node_id alone (an identity, unique anyway) is the plan's choice from the first check on, whatever the
-- statistics say.
CREATE UNIQUE INDEX kg_nodes_id_idx ON graph.kg_nodes (node_id);
-- Linking names is done through 0010's node keys; this index only slowed node writes and misled those plans.
DROP INDEX graph.kg_nodes_name_idx;
