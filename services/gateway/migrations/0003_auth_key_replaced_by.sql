-- A rotated key is revoked once its overlap ends (spec 1: "replacement key active, original revoked afterwards").
-- The authentication lookup also returns `replaced_by`, so the gateway can answer such a key as revoked rather
-- than expired. The return type changes, hence drop and create (in this migration's transaction); the grant to
-- the application role is re-applied after every migration run.

DROP FUNCTION gateway.auth_key(text);

CREATE FUNCTION gateway.auth_key(p_hash text)
RETURNS TABLE (tenant_id text, key_id text, key_hash text, type text, name text, memory_id text, workspace_id text,
               project_id text, scopes jsonb, ip_allowlist text[], app_permissions jsonb, rate_limit jsonb,
               expires_at timestamptz, revoked_at timestamptz, replaced_by text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT k.tenant_id, k.key_id, k.key_hash, k.type, k.name, k.memory_id, k.workspace_id, k.project_id, k.scopes,
         k.ip_allowlist, k.app_permissions, k.rate_limit, k.expires_at, k.revoked_at, k.replaced_by
    FROM gateway.api_keys k WHERE k.key_hash = p_hash
$$;

REVOKE ALL ON FUNCTION gateway.auth_key(text) FROM PUBLIC;
