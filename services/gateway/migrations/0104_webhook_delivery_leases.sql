-- An attempt no longer holds its bus partition while it waits for its endpoint or for the receiver: the message is
-- committed once the worker has taken the delivery's lease and queued or started the attempt
-- (services/gateway/src/webhooks/attempt-processor.ts). The lease is then what says an attempt is owed: a worker that
-- ends before recording it leaves the lease to run out, and the worker's periodic sweep announces every delivery
-- whose lease ran out without a record again (`worker.ts`, `announceExpiredLeases`). Start-up recovery in embedded
-- mode also announces deliveries whose lease is still held, due when it ends (migration 0102's function leaves them
-- out). Both work across tenants, so they go through this security-definer function, which returns what a delivery
-- message holds plus the lease's end, never a body or a secret. Migration 0102's function stays for workers of the
-- previous release during a rollout.

-- Deliveries waiting for an attempt (pending or retrying), with the end of their lease (null: none taken), in id
-- order after `p_after`, at most `p_limit`. With `p_expired_only`, only those whose lease was taken and has run out.
-- `lease_token` is the lease's end as text, exact to the microsecond, for a later `lease_until = token` check.
CREATE FUNCTION gateway.webhook_deliveries_waiting_leases(p_after text, p_limit integer, p_expired_only boolean)
RETURNS TABLE (tenant_id text, id text, subscription_id text, event_id text, cycle integer, next_step integer, next_attempt_at timestamptz,
               lease_until timestamptz, lease_token text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT d.tenant_id, d.id, d.subscription_id, d.event_id, d.cycle, d.next_step, d.next_attempt_at, d.lease_until, d.lease_until::text
    FROM gateway.webhook_deliveries d
   WHERE d.status IN ('pending', 'retrying')
     AND (NOT p_expired_only OR (d.lease_until IS NOT NULL AND d.lease_until < now()))
     AND (p_after IS NULL OR d.id > p_after)
   ORDER BY d.id
   LIMIT least(greatest(p_limit, 1), 1000)
$$;

-- Only the application role (granted EXECUTE on the schema's functions by every migration run) may call it.
REVOKE ALL ON FUNCTION gateway.webhook_deliveries_waiting_leases(text, integer, boolean) FROM PUBLIC;
