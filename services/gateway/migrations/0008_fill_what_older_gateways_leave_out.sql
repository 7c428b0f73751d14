-- Rows an older gateway writes on this schema get what migrations 0006 and 0007 give them. In a cluster the chart's
-- migrations Job runs before the rolling update, so the previous release's gateway pods keep serving, and writing, on
-- the migrated schema until they are replaced (docs/chart.md, "Upgrades and rollbacks"). Their code knows neither
-- column: a key they rotate would get no lineage (its replacement would not own what the keys before it made), and
-- an OAuth client of one project they create would keep no workspace (its tokens would not be pinned to the
-- project's). The database fills both, whichever version writes.

-- A replacement key's lineage: its predecessor's, or the predecessor itself when that is the first of its chain.
-- The current gateway sets it (store/api-keys.ts), the same way; only a row without it is filled.
CREATE FUNCTION gateway.api_keys_fill_lineage() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF NEW.lineage_id IS NULL AND NEW.rotated_from IS NOT NULL THEN
    NEW.lineage_id := COALESCE(
      (SELECT COALESCE(o.lineage_id, o.key_id) FROM gateway.api_keys o WHERE o.tenant_id = NEW.tenant_id AND o.key_id = NEW.rotated_from),
      NEW.rotated_from);
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER api_keys_fill_lineage BEFORE INSERT ON gateway.api_keys
  FOR EACH ROW EXECUTE FUNCTION gateway.api_keys_fill_lineage();

-- An OAuth client of one project lives in that project's workspace (0006): the current gateway refuses another one
-- and sets it; an older one left it NULL or took the one it was given.
CREATE FUNCTION gateway.oauth_clients_fill_workspace() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF NEW.project_id IS NOT NULL THEN
    NEW.workspace_id := COALESCE(
      (SELECT p.workspace_id FROM gateway.projects p WHERE p.tenant_id = NEW.tenant_id AND p.project_id = NEW.project_id),
      NEW.workspace_id);
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER oauth_clients_fill_workspace BEFORE INSERT ON gateway.oauth_clients
  FOR EACH ROW EXECUTE FUNCTION gateway.oauth_clients_fill_workspace();

-- What older gateways wrote between 0006/0007 and this migration, repaired once: 0006's backfill again, and 0007's
-- along every chain (a key an older gateway rotated has no lineage, and a key the current one rotated from it took
-- that key as its lineage). As the owner; forced row-level security would hide every row from it, so it is lifted for
-- this transaction only.
ALTER TABLE gateway.oauth_clients NO FORCE ROW LEVEL SECURITY;
ALTER TABLE gateway.projects NO FORCE ROW LEVEL SECURITY;
ALTER TABLE gateway.api_keys NO FORCE ROW LEVEL SECURITY;
UPDATE gateway.oauth_clients c
   SET workspace_id = p.workspace_id
  FROM gateway.projects p
 WHERE c.tenant_id = p.tenant_id AND c.project_id = p.project_id AND c.workspace_id IS DISTINCT FROM p.workspace_id;
WITH RECURSIVE chain (tenant_id, key_id, lineage_id) AS (
  SELECT k.tenant_id, k.key_id, k.key_id FROM gateway.api_keys k WHERE k.rotated_from IS NULL
  UNION ALL
  SELECT k.tenant_id, k.key_id, c.lineage_id
    FROM gateway.api_keys k JOIN chain c ON k.tenant_id = c.tenant_id AND k.rotated_from = c.key_id
)
UPDATE gateway.api_keys k SET lineage_id = c.lineage_id
  FROM chain c
 WHERE k.tenant_id = c.tenant_id AND k.key_id = c.key_id AND c.lineage_id <> k.key_id AND k.lineage_id IS DISTINCT FROM c.lineage_id;
ALTER TABLE gateway.oauth_clients FORCE ROW LEVEL SECURITY;
ALTER TABLE gateway.projects FORCE ROW LEVEL SECURITY;
ALTER TABLE gateway.api_keys FORCE ROW LEVEL SECURITY;
