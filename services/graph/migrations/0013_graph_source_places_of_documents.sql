-- Where a knowledge graph's connector documents came from, for graphs built before 0012 (docs/memory.md, "A graph
-- built from other memories"). 0012 read the memories of document facts only. A connector document always becomes a
-- Document node (`source_id` `<memory id>/<document>`), but it has a fact only when an entity was found in it, so a
-- graph of such documents was left with no places: open to every credential of the tenant, and not visited when one of
-- its memories was erased. Every memory of a Document node or of a document fact is added here to what the graph
-- holds (kept as it is: what jobs wrote since), with its documents' workspace ('' when none of its documents is left,
-- which no workspace-bound credential matches). Backfilled as the owner; forced row-level security would hide every
-- row from it, so it is lifted for the duration of this transaction only.
ALTER TABLE graph.knowledge_graphs NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_nodes NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_edges NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.documents NO FORCE ROW LEVEL SECURITY;
UPDATE graph.knowledge_graphs g
   SET source_places = s.places
  FROM (
    SELECT p.tenant_id, p.graph_id, jsonb_agg(p.place ORDER BY p.place->>'memory_id', p.place->>'workspace_id') AS places
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
          ) k
      ) p
     GROUP BY p.tenant_id, p.graph_id
  ) s
 WHERE g.tenant_id = s.tenant_id AND g.graph_id = s.graph_id AND g.source_places IS DISTINCT FROM s.places;
ALTER TABLE graph.knowledge_graphs FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_nodes FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_edges FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.documents FORCE ROW LEVEL SECURITY;
