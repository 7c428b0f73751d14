-- Graph chat (docs/memory.md, "Graph chat"): linking a question's words to knowledge-graph nodes, and reading the
-- past of a neighbourhood.
--
-- kg_fold is the one folding of names for linking: compatibility forms decomposed (NFKD), accents (combining
-- diacritical marks) dropped, lower case, a trailing possessive dropped, every run of spaces and punctuation one
-- space, a leading article dropped. A node's names and a question's phrases both pass through this same function,
-- so they compare alike whatever the server's locale does with case and punctuation.
CREATE FUNCTION graph.kg_fold(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
  SELECT regexp_replace(
           btrim(regexp_replace(
             regexp_replace(lower(regexp_replace(normalize(coalesce(t, ''), NFKD), '[\u0300-\u036f]+', '', 'g')), '[''’]s\M', '', 'g'),
             '[[:space:][:punct:]]+', ' ', 'g')),
           '^(the|a|an) ', '')
$fn$;

-- The keys a node is found by: its name, its `name`, `title`, `aliases` (an array) and `domain` properties, and the
-- domain's first label (`acme` of `acme.com`). Equality on text is leakproof, so under row-level security this
-- primary key serves `match_key = ANY(...)` as an index condition (a GIN index over an array of keys could not).
CREATE TABLE graph.kg_node_keys (
  tenant_id text NOT NULL,
  graph_id text NOT NULL,
  match_key text NOT NULL,
  node_id bigint NOT NULL,
  PRIMARY KEY (tenant_id, graph_id, match_key, node_id)
);
-- No foreign key to kg_nodes: a key row's check would be one look-up per row, planned once per session, and a plan
-- made while kg_nodes looked empty (a graph's first job) scans the table for every key — quadratic (4,000 nodes
-- took 2 s, 100,000 never finished). The delete trigger below removes a deleted node's keys instead, in the same
-- statement (cascaded deletes of a graph's nodes included).
CREATE INDEX kg_node_keys_node_idx ON graph.kg_node_keys (tenant_id, graph_id, node_id);

ALTER TABLE graph.kg_node_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE graph.kg_node_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON graph.kg_node_keys USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));

-- Kept by statement-level triggers (one INSERT per statement, whatever its number of rows): the keys of every node
-- a statement inserts or updates are added. Keys of a name a node no longer has stay (it is still found by what it
-- was called); they go with the node.
CREATE FUNCTION graph.kg_node_keys_add() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
  INSERT INTO graph.kg_node_keys (tenant_id, graph_id, match_key, node_id)
  SELECT DISTINCT n.tenant_id, n.graph_id, k.key, n.node_id
    FROM changed_nodes n
    CROSS JOIN LATERAL (
      SELECT graph.kg_fold(v) AS key
        FROM unnest(ARRAY[
               n.name,
               n.properties ->> 'name',
               n.properties ->> 'title',
               n.properties ->> 'domain',
               split_part(n.properties ->> 'domain', '.', 1)
             ] || ARRAY(SELECT jsonb_array_elements_text(CASE WHEN jsonb_typeof(n.properties -> 'aliases') = 'array' THEN n.properties -> 'aliases' ELSE '[]'::jsonb END))) AS v
    ) k
   WHERE k.key <> '' AND length(k.key) <= 200
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER kg_nodes_keys_insert AFTER INSERT ON graph.kg_nodes
  REFERENCING NEW TABLE AS changed_nodes FOR EACH STATEMENT EXECUTE FUNCTION graph.kg_node_keys_add();
CREATE TRIGGER kg_nodes_keys_update AFTER UPDATE ON graph.kg_nodes
  REFERENCING NEW TABLE AS changed_nodes FOR EACH STATEMENT EXECUTE FUNCTION graph.kg_node_keys_add();

CREATE FUNCTION graph.kg_node_keys_remove() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
  DELETE FROM graph.kg_node_keys k USING gone_nodes g
   WHERE k.tenant_id = g.tenant_id AND k.graph_id = g.graph_id AND k.node_id = g.node_id;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER kg_nodes_keys_delete AFTER DELETE ON graph.kg_nodes
  REFERENCING OLD TABLE AS gone_nodes FOR EACH STATEMENT EXECUTE FUNCTION graph.kg_node_keys_remove();

-- Nodes written before this migration.
INSERT INTO graph.kg_node_keys (tenant_id, graph_id, match_key, node_id)
SELECT DISTINCT n.tenant_id, n.graph_id, graph.kg_fold(v), n.node_id
  FROM graph.kg_nodes n
  CROSS JOIN LATERAL unnest(ARRAY[n.name, n.properties ->> 'name', n.properties ->> 'title', n.properties ->> 'domain', split_part(n.properties ->> 'domain', '.', 1)]) AS v
 WHERE graph.kg_fold(v) <> '' AND length(graph.kg_fold(v)) <= 200
ON CONFLICT DO NOTHING;

-- A question about the past reads closed edges too (valid_to set). The open edges have their partial indexes
-- (0008); these hold only closed edges, so opening an edge (every import's bulk insert) never writes to them.
CREATE INDEX kg_edges_closed_from_idx ON graph.kg_edges (tenant_id, graph_id, from_node) WHERE valid_to IS NOT NULL;
CREATE INDEX kg_edges_closed_to_idx ON graph.kg_edges (tenant_id, graph_id, to_node) WHERE valid_to IS NOT NULL;

-- The entities route finds an entity by its id (docs/memory.md, "Entities").
CREATE INDEX entities_id_idx ON graph.entities (tenant_id, entity_id);
