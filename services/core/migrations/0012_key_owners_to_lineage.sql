-- Rows a rotated key's replacement made before gateway migration 0007 belong to its lineage (docs/gateway.md, "A
-- replacement owns what its key made"). Until 0007 an API key's identity subject was its own id, so a replacement
-- (rotated_from set) stored `<kind>:<its own id>` (kind ck_live, ck_test, ck_eph or mk) as the owner of its chat
-- sessions, projects, project files, feedback and credentials, and as the creator of its cc pairs. Since 0007 the
-- subject is the first key of the chain, which no such row names: nothing reached them any more. Each is re-owned to
-- `<kind>:<lineage id>` (a replacement keeps its key's type, hence its kind).
--
-- The lineage is read from the gateway's schema, which the migrations Job and embedded mode migrate before this one
-- as the same owner role, whom its `owner_lookup` policy lets read every key. Without `lineage_id` (a gateway schema
-- before 0007) it is the chain along `rotated_from`, the rule 0007 backfills by. A database without the gateway's
-- schema (a stack of core alone) has no keys to follow. OAuth clients (`oauth:`) and users (`session:`) are never
-- rotated and stay as they are. No temporary table: the owner role may lack TEMP on the database.
-- Updated as the owner; forced row-level security would hide every row from it, so it is lifted for the duration of
-- this transaction only.
ALTER TABLE core.chat_sessions NO FORCE ROW LEVEL SECURITY;
ALTER TABLE core.chat_projects NO FORCE ROW LEVEL SECURITY;
ALTER TABLE core.chat_project_files NO FORCE ROW LEVEL SECURITY;
ALTER TABLE core.chat_feedback NO FORCE ROW LEVEL SECURITY;
ALTER TABLE core.credentials NO FORCE ROW LEVEL SECURITY;
ALTER TABLE core.cc_pairs NO FORCE ROW LEVEL SECURITY;

DO $$
DECLARE
  moves text;
  -- The owners a key of `m` stored: `<kind>:<key id>` for each kind of key.
  mine text := '''ck_live:'' || m.key_id, ''ck_test:'' || m.key_id, ''ck_eph:'' || m.key_id, ''mk:'' || m.key_id';
  t text;
BEGIN
  IF to_regclass('gateway.api_keys') IS NULL THEN
    RETURN;
  END IF;
  -- (tenant_id, key_id, lineage_id) of every key whose lineage is another key.
  IF EXISTS (SELECT 1 FROM information_schema.columns
              WHERE table_schema = 'gateway' AND table_name = 'api_keys' AND column_name = 'lineage_id') THEN
    moves := 'SELECT tenant_id, key_id, lineage_id FROM gateway.api_keys WHERE lineage_id IS NOT NULL AND lineage_id <> key_id';
  ELSE
    moves := 'WITH RECURSIVE chain (tenant_id, key_id, lineage_id) AS (
                SELECT k.tenant_id, k.key_id, k.key_id FROM gateway.api_keys k WHERE k.rotated_from IS NULL
                UNION ALL
                SELECT k.tenant_id, k.key_id, c.lineage_id
                  FROM gateway.api_keys k JOIN chain c ON k.tenant_id = c.tenant_id AND k.rotated_from = c.key_id)
              SELECT tenant_id, key_id, lineage_id FROM chain WHERE lineage_id <> key_id';
  END IF;

  -- Feedback's primary key includes its owner: of the feedback one lineage gave on one message (possible in theory
  -- only, since feedback is given in one's own sessions), the latest stays.
  EXECUTE format(
    'DELETE FROM core.chat_feedback f
      USING (SELECT x.tenant_id, x.message_id, x.owner,
                    row_number() OVER (PARTITION BY x.tenant_id, x.message_id, COALESCE(split_part(x.owner, '':'', 1) || '':'' || m.lineage_id, x.owner)
                                       ORDER BY x.time_created DESC, x.owner) AS n
               FROM core.chat_feedback x
               LEFT JOIN (%s) m ON x.tenant_id = m.tenant_id AND x.owner IN (%s)
              WHERE split_part(x.owner, '':'', 1) IN (''ck_live'', ''ck_test'', ''ck_eph'', ''mk'')) d
      WHERE f.tenant_id = d.tenant_id AND f.message_id = d.message_id AND f.owner = d.owner AND d.n > 1', moves, mine);

  FOREACH t IN ARRAY ARRAY['chat_sessions', 'chat_projects', 'chat_project_files', 'chat_feedback', 'credentials'] LOOP
    EXECUTE format(
      'UPDATE core.%I r SET owner = split_part(r.owner, '':'', 1) || '':'' || m.lineage_id FROM (%s) m
        WHERE r.tenant_id = m.tenant_id AND r.owner IN (%s)', t, moves, mine);
  END LOOP;

  -- A pair's indexer writes as the key that made it.
  EXECUTE format(
    'UPDATE core.cc_pairs p SET creator_subject = m.lineage_id FROM (%s) m
      WHERE p.tenant_id = m.tenant_id AND p.creator_credential IN (''ck_live'', ''ck_test'', ''ck_eph'', ''mk'') AND p.creator_subject = m.key_id', moves);
END $$;

ALTER TABLE core.chat_sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE core.chat_projects FORCE ROW LEVEL SECURITY;
ALTER TABLE core.chat_project_files FORCE ROW LEVEL SECURITY;
ALTER TABLE core.chat_feedback FORCE ROW LEVEL SECURITY;
ALTER TABLE core.credentials FORCE ROW LEVEL SECURITY;
ALTER TABLE core.cc_pairs FORCE ROW LEVEL SECURITY;
