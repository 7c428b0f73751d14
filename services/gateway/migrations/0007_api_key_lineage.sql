-- A key's lineage: the id of the first key of its rotation chain (NULL: the key is its own first). Services own a
-- credential's data (chat sessions, projects, feedback, agents workflows) by the subject of its identity, and a
-- rotation's replacement has a new key id: with the key id as that subject, a rotation left everything its key had
-- made to the old key, unreachable once it was revoked. The identity's subject is now the lineage, so a replacement
-- owns what the keys before it made. Backfilled along `rotated_from` as the owner; forced row-level security would
-- hide every row from it, so it is lifted for this transaction only.
ALTER TABLE gateway.api_keys ADD COLUMN lineage_id text;

ALTER TABLE gateway.api_keys NO FORCE ROW LEVEL SECURITY;
WITH RECURSIVE chain (tenant_id, key_id, lineage_id) AS (
  SELECT k.tenant_id, k.key_id, k.key_id FROM gateway.api_keys k WHERE k.rotated_from IS NULL
  UNION ALL
  SELECT k.tenant_id, k.key_id, c.lineage_id
    FROM gateway.api_keys k JOIN chain c ON k.tenant_id = c.tenant_id AND k.rotated_from = c.key_id
)
UPDATE gateway.api_keys k SET lineage_id = c.lineage_id
  FROM chain c
 WHERE k.tenant_id = c.tenant_id AND k.key_id = c.key_id AND c.lineage_id <> k.key_id;
ALTER TABLE gateway.api_keys FORCE ROW LEVEL SECURITY;

-- The authentication lookup returns the lineage too. The return type changes, hence drop and create (in this
-- migration's transaction); the grant to the application role is re-applied after every migration run.
DROP FUNCTION gateway.auth_key(text);

CREATE FUNCTION gateway.auth_key(p_hash text)
RETURNS TABLE (tenant_id text, key_id text, key_hash text, type text, name text, memory_id text, workspace_id text,
               project_id text, scopes jsonb, ip_allowlist text[], app_permissions jsonb, rate_limit jsonb,
               expires_at timestamptz, revoked_at timestamptz, replaced_by text, lineage_id text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT k.tenant_id, k.key_id, k.key_hash, k.type, k.name, k.memory_id, k.workspace_id, k.project_id, k.scopes,
         k.ip_allowlist, k.app_permissions, k.rate_limit, k.expires_at, k.revoked_at, k.replaced_by,
         COALESCE(k.lineage_id, k.key_id)
    FROM gateway.api_keys k WHERE k.key_hash = p_hash
$$;

REVOKE ALL ON FUNCTION gateway.auth_key(text) FROM PUBLIC;
