-- A knowledge graph that holds what only administrators may see (docs/memory.md, "Knowledge graphs"): a connector
-- ingest by an administrator takes the tenant's documents that are not public too, and their titles, ids and
-- entities become nodes. Such a graph is, to anyone but an administrator, as absent as another tenant's. Set by the
-- job that first writes such a document, and kept: the graph's closed facts keep that document's history.
ALTER TABLE graph.knowledge_graphs ADD COLUMN admin_only boolean NOT NULL DEFAULT false;

-- Graphs built before: any fact whose source is a connector document that is not public. Backfilled as the owner;
-- forced row-level security would hide every row from it, so it is lifted for the duration of this transaction only.
ALTER TABLE graph.knowledge_graphs NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_edges NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.documents NO FORCE ROW LEVEL SECURITY;
UPDATE graph.knowledge_graphs g
   SET admin_only = true
 WHERE EXISTS (
   SELECT 1 FROM graph.kg_edges e
     JOIN graph.documents d
       ON d.tenant_id = e.tenant_id AND d.memory_id = e.source_ref->>'memory_id'
      AND d.cc_pair_id = (e.source_ref->>'cc_pair_id')::integer AND d.external_id = e.source_ref->>'external_id'
    WHERE e.tenant_id = g.tenant_id AND e.graph_id = g.graph_id AND e.source_kind = 'document' AND NOT d.access_public);
ALTER TABLE graph.knowledge_graphs FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_edges FORCE ROW LEVEL SECURITY;
ALTER TABLE graph.documents FORCE ROW LEVEL SECURITY;
