-- Signing secrets are now stored sealed (AES-256-GCM, `enc:v1:<key id>:...`, see services/gateway/src/webhooks/
-- secret-storage.ts). A migration cannot seal the rows written before that: it never holds the key. The gateway
-- does it when it starts, and for that it must find the rows still in plaintext (or sealed with a key that no longer
-- seals) across tenants. This function lists them by id only; it returns no secret, sealed or not. Each row is then
-- read and rewritten inside its own tenant (Db.withTenant), under the ordinary policy.

-- The function runs as the schema owner, which row-level security binds too (FORCE): let it read the table.
DO $$
BEGIN
  EXECUTE format('CREATE POLICY webhook_subscriptions_owner_lookup ON gateway.webhook_subscriptions FOR SELECT TO %I USING (true)', current_user);
END
$$;

-- Rows whose `secret` or `previous_secret` does not start with `p_sealed_prefix` (`enc:v1:<primary key id>:`),
-- in id order after `p_after`, at most `p_limit`.
CREATE FUNCTION gateway.webhook_secrets_to_seal(p_sealed_prefix text, p_after text, p_limit integer)
RETURNS TABLE (tenant_id text, id text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT s.tenant_id, s.id FROM gateway.webhook_subscriptions s
   WHERE (NOT starts_with(s.secret, p_sealed_prefix)
          OR (s.previous_secret IS NOT NULL AND NOT starts_with(s.previous_secret, p_sealed_prefix)))
     AND (p_after IS NULL OR s.id > p_after)
   ORDER BY s.id
   LIMIT least(greatest(p_limit, 1), 1000)
$$;

REVOKE ALL ON FUNCTION gateway.webhook_secrets_to_seal(text, text, integer) FROM PUBLIC;
