-- Deliveries waiting for an attempt (pending or retrying) are announced by a message on the bus. In embedded mode the
-- bus lives in the process, so a stop or a crash loses those messages while the rows stay: the worker announces them
-- again when it starts (services/gateway/src/webhooks/worker.ts, `recoverOnStart`). For that it must find them across
-- tenants. This function lists what a delivery message holds (ids, cycle, step, due time), never a body or a secret;
-- the attempt itself re-reads the delivery inside its own tenant under the ordinary policy.

-- The function runs as the schema owner, which row-level security binds too (FORCE): let it read the table.
DO $$
BEGIN
  EXECUTE format('CREATE POLICY webhook_deliveries_owner_recovery ON gateway.webhook_deliveries FOR SELECT TO %I USING (true)', current_user);
END
$$;

CREATE INDEX webhook_deliveries_waiting ON gateway.webhook_deliveries (id) WHERE status IN ('pending', 'retrying');

-- Deliveries waiting for an attempt whose lease is not held, in id order after `p_after`, at most `p_limit`.
CREATE FUNCTION gateway.webhook_deliveries_waiting(p_after text, p_limit integer)
RETURNS TABLE (tenant_id text, id text, subscription_id text, event_id text, cycle integer, next_step integer, next_attempt_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT d.tenant_id, d.id, d.subscription_id, d.event_id, d.cycle, d.next_step, d.next_attempt_at
    FROM gateway.webhook_deliveries d
   WHERE d.status IN ('pending', 'retrying')
     AND (d.lease_until IS NULL OR d.lease_until < now())
     AND (p_after IS NULL OR d.id > p_after)
   ORDER BY d.id
   LIMIT least(greatest(p_limit, 1), 1000)
$$;

-- Only the application role (granted EXECUTE on the schema's functions by every migration run) may call it.
REVOKE ALL ON FUNCTION gateway.webhook_deliveries_waiting(text, integer) FROM PUBLIC;
