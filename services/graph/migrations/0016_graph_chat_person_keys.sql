-- Graph chat finds a person by more than the full name (docs/memory.md, "Graph chat", linking): by an e-mail address
-- written in the question, by the name without a leading honorific ("Dr. Sarah O'Connor" is found as Sarah
-- O'Connor), and by the first or the last part of the name alone (a first name or a surname), which links only when
-- exactly one person of the graph has it. A part's key is `part:<folded part>`: the fold turns every punctuation mark
-- into a space, so no folded phrase of a question ever contains a colon, and only the lookup of lone words reaches
-- these keys. (A profile URL is looked up by the person's resolution key, which needs no key of its own.) At most
-- three keys more a person: each key is a row and an index entry the import writes.

-- The name without its leading honorifics ("Prof. Dr. Hans-Peter Müller" → "Hans-Peter Müller").
CREATE FUNCTION graph.kg_without_honorifics(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
  SELECT regexp_replace(coalesce(t, ''), '^\s*((dr|prof|professor|mr|mrs|ms|miss|mx|sir|dame|herr|frau|mme|mlle|rev)\.?\s+)+', '', 'i')
$fn$;

-- The keys of a person beside those of every node: e-mail, the name without honorifics (one more key only when it had
-- one), a Chinese or Japanese name without its spaces, and `part:` keys of the first and the last part of a name of two parts or more (parts of one letter left out).
CREATE FUNCTION graph.kg_person_keys(p_name text, p_properties jsonb) RETURNS SETOF text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
  WITH parts AS (SELECT regexp_split_to_array(btrim(graph.kg_without_honorifics(p_name)), '\s+') AS a)
  SELECT graph.kg_fold(v)
    FROM unnest(ARRAY[
           p_properties ->> 'email',
           graph.kg_without_honorifics(p_name),
           -- A Chinese or Japanese name stored spaced ("李 雷", from first and last name columns) as it is written.
           CASE WHEN p_name ~ '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]' THEN regexp_replace(p_name, '\s+', '', 'g') END
         ]) AS v
  UNION ALL
  SELECT 'part:' || graph.kg_fold(part)
    FROM parts, unnest(ARRAY[a[1], a[array_length(a, 1)]]) AS part
   WHERE array_length(a, 1) > 1 AND length(graph.kg_fold(part)) > 1
$fn$;

CREATE OR REPLACE FUNCTION graph.kg_node_keys_add() RETURNS trigger
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
      UNION ALL
      SELECT p FROM graph.kg_person_keys(n.name, n.properties) AS p WHERE n.label = 'Person'
    ) k
   WHERE k.key <> '' AND length(k.key) <= 200
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$fn$;

-- People written before this migration.
INSERT INTO graph.kg_node_keys (tenant_id, graph_id, match_key, node_id)
SELECT DISTINCT n.tenant_id, n.graph_id, k.key, n.node_id
  FROM graph.kg_nodes n
  CROSS JOIN LATERAL graph.kg_person_keys(n.name, n.properties) AS k(key)
 WHERE n.label = 'Person' AND k.key <> '' AND length(k.key) <= 200
ON CONFLICT DO NOTHING;
