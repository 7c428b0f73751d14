-- Where a connector and a credential belong (docs/core.md, "A cc pair lives in a workspace"): the workspace and memory
-- of the credential that made them. A credential bound to a workspace, or scoped to some memories, may use only the
-- connectors and credentials placed within its reach ('' for rows whose place is unknown: tenant-wide credentials
-- only), so it cannot pair its own credential with another workspace's connector, nor another workspace's stored
-- secret with its own connector, and index their documents into its memory.
ALTER TABLE core.connectors ADD COLUMN workspace_id text NOT NULL DEFAULT '';
ALTER TABLE core.connectors ADD COLUMN memory_id text NOT NULL DEFAULT '';
ALTER TABLE core.credentials ADD COLUMN workspace_id text NOT NULL DEFAULT '';
ALTER TABLE core.credentials ADD COLUMN memory_id text NOT NULL DEFAULT '';

-- Rows made before: the place of their pairs, when they all have one. Backfilled as the owner; forced row-level
-- security would hide every row from it, so it is lifted for the duration of this transaction only.
ALTER TABLE core.connectors NO FORCE ROW LEVEL SECURITY;
ALTER TABLE core.credentials NO FORCE ROW LEVEL SECURITY;
ALTER TABLE core.cc_pairs NO FORCE ROW LEVEL SECURITY;
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT * FROM (VALUES ('connectors', 'connector_id'), ('credentials', 'credential_id')) AS x(tbl, col) LOOP
    EXECUTE format(
      'UPDATE core.%1$I c SET workspace_id = p.workspace_id, memory_id = p.memory_id
         FROM (SELECT tenant_id, %2$I AS id, min(workspace_id) AS workspace_id, min(memory_id) AS memory_id
                 FROM core.cc_pairs GROUP BY tenant_id, %2$I
               HAVING count(DISTINCT (workspace_id, memory_id)) = 1) p
        WHERE c.tenant_id = p.tenant_id AND c.id = p.id', t.tbl, t.col);
  END LOOP;
END $$;
ALTER TABLE core.connectors FORCE ROW LEVEL SECURITY;
ALTER TABLE core.credentials FORCE ROW LEVEL SECURITY;
ALTER TABLE core.cc_pairs FORCE ROW LEVEL SECURITY;
