-- Workflows, lists and seed statuses a rotated key's replacement started before gateway migration 0007 belong to
-- its lineage (docs/gateway.md, "A replacement owns what its key made"). Until 0007 an API key's identity subject was
-- its own id, so a replacement (rotated_from set) stored `<kind>:<its own id>` (kind ck_live, ck_test, ck_eph or mk) as
-- their owner, and its id as the subject a workflow's worker reads the tenant's knowledge as (`state.starter`). Since
-- 0007 the subject is the first key of the chain, which no such row names. Each is re-owned to `<kind>:<lineage id>`,
-- as core's migration 0012 does for chat.
--
-- The lineage is read from the gateway's schema, which the migrations Job and embedded mode migrate before this one
-- as the same owner role, whom its `owner_lookup` policy lets read every key. Without `lineage_id` (a gateway schema
-- before 0007) it is the chain along `rotated_from`, the rule 0007 backfills by. A database without the gateway's
-- schema (a stack of agents alone) has no keys to follow. OAuth clients and users are never rotated. No primary key
-- here includes the owner. Updated as the owner; forced row-level security would hide every row from it, so it is
-- lifted for the duration of this transaction only.
ALTER TABLE agents.workflows NO FORCE ROW LEVEL SECURITY;
ALTER TABLE agents.lists NO FORCE ROW LEVEL SECURITY;
ALTER TABLE agents.seed_statuses NO FORCE ROW LEVEL SECURITY;

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

  FOREACH t IN ARRAY ARRAY['workflows', 'lists', 'seed_statuses'] LOOP
    EXECUTE format(
      'UPDATE agents.%I r SET owner = split_part(r.owner, '':'', 1) || '':'' || m.lineage_id FROM (%s) m
        WHERE r.tenant_id = m.tenant_id AND r.owner IN (%s)', t, moves, mine);
  END LOOP;

  EXECUTE format(
    'UPDATE agents.workflows w SET state = jsonb_set(w.state, ''{starter,subject}'', to_jsonb(m.lineage_id)) FROM (%s) m
      WHERE w.tenant_id = m.tenant_id AND w.state->''starter''->>''credential'' IN (''ck_live'', ''ck_test'', ''ck_eph'', ''mk'')
        AND w.state->''starter''->>''subject'' = m.key_id', moves);
END $$;

ALTER TABLE agents.workflows FORCE ROW LEVEL SECURITY;
ALTER TABLE agents.lists FORCE ROW LEVEL SECURITY;
ALTER TABLE agents.seed_statuses FORCE ROW LEVEL SECURITY;
