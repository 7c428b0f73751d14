-- Re-sealing connector credentials after a key rotation (docs/core.md, "Credential secrets"). Every value of
-- `credential_json` is sealed (`enc:v1:<key id>:...`); a migration cannot re-seal them, since it never holds the key
-- ring. The core worker (and embedded mode) does it when it starts (services/core/src/application/
-- credential-sealing.ts), and for that it must find the credentials holding a value sealed with a key other than the
-- first of the ring, across tenants. This function lists them by id only; it returns no value, sealed or not. Each
-- credential is then locked, read and rewritten inside its own tenant (Db.withTenant), under the ordinary policy.

-- The function runs as the schema owner, which row-level security binds too (FORCE): let it read the table.
DO $$
BEGIN
  EXECUTE format('CREATE POLICY credentials_owner_lookup ON core.credentials FOR SELECT TO %I USING (true)', current_user);
END
$$;

-- Credentials with a `credential_json` value that is not a string starting with `p_sealed_prefix`
-- (`enc:v1:<primary key id>:`), in id order after `p_after`, at most `p_limit`. Ids are unique across tenants.
CREATE FUNCTION core.credentials_to_seal(p_sealed_prefix text, p_after integer, p_limit integer)
RETURNS TABLE (tenant_id text, id integer)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT c.tenant_id, c.id FROM core.credentials c
   WHERE (p_after IS NULL OR c.id > p_after)
     AND EXISTS (
       SELECT 1 FROM jsonb_each(c.credential_json) AS v(key, value)
        WHERE jsonb_typeof(v.value) <> 'string' OR NOT starts_with(v.value #>> '{}', p_sealed_prefix))
   ORDER BY c.id
   LIMIT least(greatest(p_limit, 1), 1000)
$$;

-- Only the application role (granted EXECUTE on the schema's functions by every migration run) may call it.
REVOKE ALL ON FUNCTION core.credentials_to_seal(text, integer, integer) FROM PUBLIC;
