-- A knowledge graph's places (0012) kept by the database, whichever version writes its connector documents. In a
-- cluster the chart's migrations Job runs before the rolling update, so the previous release's graph-worker pods keep
-- filling graphs on the migrated schema until they are replaced (docs/chart.md, "Upgrades and rollbacks"). A worker
-- from before 0012 writes Document nodes and document facts but never `source_places`, and an empty list reads as "no
-- restriction": the graph would be open to every credential of the tenant, and an erasure of one of its memories would
-- not visit it. So every Document node and document fact written now names its memory among the graph's places, with
-- its documents' workspace, as 0013 derived them ('' when none of its documents is left, which no workspace-bound
-- credential matches). A memory the graph already names is left as it is: the current worker adds the same place
-- itself (addGraphSourcePlaces), and one memory's documents live in its one workspace.
CREATE FUNCTION graph.place_document_memory(p_tenant_id text, p_graph_id text, p_memory_id text) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
  UPDATE graph.knowledge_graphs g
     SET source_places = (SELECT jsonb_agg(x.p ORDER BY x.p)
                            FROM (SELECT jsonb_array_elements(g.source_places) AS p
                                  UNION
                                  SELECT jsonb_build_object(
                                           'workspace_id', coalesce((SELECT d.workspace_id FROM graph.documents d
                                                                      WHERE d.tenant_id = p_tenant_id AND d.memory_id = p_memory_id LIMIT 1), ''),
                                           'memory_id', p_memory_id)) x)
   WHERE g.tenant_id = p_tenant_id AND g.graph_id = p_graph_id
     AND NOT g.source_places @> jsonb_build_array(jsonb_build_object('memory_id', p_memory_id))
$$;

-- A Document node's `source_id` is `<memory id>/<cc pair>/<document>`.
CREATE FUNCTION graph.kg_nodes_place_memory() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM graph.place_document_memory(NEW.tenant_id, NEW.graph_id, split_part(NEW.source_id, '/', 1));
  RETURN NULL;
END
$$;
CREATE TRIGGER kg_nodes_place_memory AFTER INSERT ON graph.kg_nodes
  FOR EACH ROW WHEN (NEW.source_kind = 'document' AND position('/' IN NEW.source_id) > 1)
  EXECUTE FUNCTION graph.kg_nodes_place_memory();

-- A document fact names its memory in `source_ref`.
CREATE FUNCTION graph.kg_edges_place_memory() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM graph.place_document_memory(NEW.tenant_id, NEW.graph_id, NEW.source_ref->>'memory_id');
  RETURN NULL;
END
$$;
CREATE TRIGGER kg_edges_place_memory AFTER INSERT ON graph.kg_edges
  FOR EACH ROW WHEN (NEW.source_kind = 'document' AND coalesce(NEW.source_ref->>'memory_id', '') <> '')
  EXECUTE FUNCTION graph.kg_edges_place_memory();

-- Graphs an older worker filled between 0013 and this migration, repaired once: 0013's derivation again, added to
-- what each graph holds. As the owner; forced row-level security would hide every row from it, so it is lifted for
-- the duration of this transaction only.
ALTER TABLE graph.knowledge_graphs NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_nodes NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_edges NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.documents NO FORCE ROW LEVEL SECURITY;
UPDATE graph.knowledge_graphs g
   SET source_places = s.places
  FROM (
    SELECT p.tenant_id, p.graph_id, jsonb_agg(p.place ORDER BY p.place) AS places
      FROM (
        SELECT DISTINCT k.tenant_id, k.graph_id, k.place
          FROM (
            SELECT g0.tenant_id, g0.graph_id, x.place
              FROM graph.knowledge_graphs g0, jsonb_array_elements(g0.source_places) AS x(place)
            UNION ALL
            SELECT m.tenant_id, m.graph_id, jsonb_build_object('workspace_id', coalesce(d.workspace_id, ''), 'memory_id', m.memory_id)
              FROM (
                SELECT DISTINCT n.tenant_id, n.graph_id, split_part(n.source_id, '/', 1) AS memory_id
                  FROM graph.kg_nodes n
                 WHERE n.source_kind = 'document' AND position('/' IN n.source_id) > 1
                UNION
                SELECT DISTINCT e.tenant_id, e.graph_id, e.source_ref->>'memory_id'
                  FROM graph.kg_edges e
                 WHERE e.source_kind = 'document' AND coalesce(e.source_ref->>'memory_id', '') <> ''
              ) m
              LEFT JOIN LATERAL (SELECT workspace_id FROM graph.documents d
                                  WHERE d.tenant_id = m.tenant_id AND d.memory_id = m.memory_id LIMIT 1) d ON true
             -- A memory the graph names already keeps its place.
             WHERE NOT EXISTS (SELECT 1 FROM graph.knowledge_graphs g1
                                WHERE g1.tenant_id = m.tenant_id AND g1.graph_id = m.graph_id
                                  AND g1.source_places @> jsonb_build_array(jsonb_build_object('memory_id', m.memory_id)))
          ) k
      ) p
     GROUP BY p.tenant_id, p.graph_id
  ) s
 WHERE g.tenant_id = s.tenant_id AND g.graph_id = s.graph_id AND g.source_places IS DISTINCT FROM s.places;
ALTER TABLE graph.knowledge_graphs FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_nodes FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_edges FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.documents FORCE ROW LEVEL SECURITY;
