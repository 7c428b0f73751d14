-- Delivery history is kept for a retention period, not for ever: a settled delivery (succeeded, or dead) whose last
-- change is older than the retention is deleted with its attempts (ON DELETE CASCADE) by the webhooks worker's
-- periodic sweep (services/gateway/src/webhooks/worker.ts, `retentionDays`). A delivery still waiting for an attempt
-- (pending or retrying) is never deleted, whatever its age. The sweep works across tenants, so it goes through a
-- security-definer function that deletes only settled rows older than the retention and returns a count.

-- The function runs as the schema owner, which row-level security binds too (FORCE): let it delete settled rows
-- only (it already reads the table through migration 0102's policy).
DO $$
BEGIN
  EXECUTE format(
    'CREATE POLICY webhook_deliveries_owner_retention ON gateway.webhook_deliveries FOR DELETE TO %I USING (status IN (''succeeded'', ''dead''))',
    current_user);
END
$$;

-- Settled deliveries in the order they stop changing: the sweep reads the oldest first.
CREATE INDEX webhook_deliveries_settled ON gateway.webhook_deliveries (updated_at) WHERE status IN ('succeeded', 'dead');

-- Deletes at most `p_limit` settled deliveries last changed longer than `p_retention` ago (their attempts go with
-- them); returns how many. The conditions are checked again on each row as it is deleted, so a dead letter replayed
-- meanwhile (pending again) is kept.
CREATE FUNCTION gateway.prune_webhook_deliveries(p_retention interval, p_limit integer)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  WITH old AS (
    SELECT d.id
      FROM gateway.webhook_deliveries d
     WHERE d.status IN ('succeeded', 'dead') AND d.updated_at < now() - p_retention
     ORDER BY d.updated_at
     LIMIT least(greatest(p_limit, 1), 10000)
  ), gone AS (
    DELETE FROM gateway.webhook_deliveries d
     USING old
     WHERE d.id = old.id AND d.status IN ('succeeded', 'dead') AND d.updated_at < now() - p_retention
    RETURNING 1
  )
  SELECT count(*) FROM gone
$$;

-- Only the application role (granted EXECUTE on the schema's functions by every migration run) may call it.
REVOKE ALL ON FUNCTION gateway.prune_webhook_deliveries(interval, integer) FROM PUBLIC;
