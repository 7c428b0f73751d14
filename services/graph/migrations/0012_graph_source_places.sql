-- Where a knowledge graph's connector documents came from (docs/memory.md, "A graph built from other memories"):
-- each workspace and memory (`[{workspace_id, memory_id}]`) of a connector document a job wrote into it. A credential
-- bound to one workspace, scoped to some memories, or denied the memory sees such a graph only when every one of them
-- is within its reach; to anyone else it is as absent as another tenant's. Set by the jobs that write such documents,
-- and kept: the graph's closed facts keep those documents' history.
ALTER TABLE graph.knowledge_graphs ADD COLUMN source_places jsonb NOT NULL DEFAULT '[]'::jsonb;

-- Graphs built before: every memory a document fact names, with its documents' workspace ('' when none of its
-- documents is left, which no workspace-bound credential matches). Backfilled as the owner; forced row-level security
-- would hide every row from it, so it is lifted for the duration of this transaction only.
ALTER TABLE graph.knowledge_graphs NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_edges NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.documents NO FORCE ROW LEVEL SECURITY;
UPDATE graph.knowledge_graphs g
   SET source_places = s.places
  FROM (
    SELECT m.tenant_id, m.graph_id,
           jsonb_agg(jsonb_build_object('workspace_id', coalesce(d.workspace_id, ''), 'memory_id', m.memory_id) ORDER BY m.memory_id) AS places
      FROM (SELECT DISTINCT e.tenant_id, e.graph_id, e.source_ref->>'memory_id' AS memory_id
              FROM graph.kg_edges e
             WHERE e.source_kind = 'document' AND e.source_ref->>'memory_id' IS NOT NULL) m
      LEFT JOIN LATERAL (SELECT workspace_id FROM graph.documents d
                          WHERE d.tenant_id = m.tenant_id AND d.memory_id = m.memory_id LIMIT 1) d ON true
     GROUP BY m.tenant_id, m.graph_id
  ) s
 WHERE g.tenant_id = s.tenant_id AND g.graph_id = s.graph_id;
ALTER TABLE graph.knowledge_graphs FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_edges FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.documents FORCE ROW LEVEL SECURITY;
