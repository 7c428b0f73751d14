-- Running workflows (docs/agents.md, "Workflows"): the agents worker claims a workflow (claimed_by, claimed_until)
-- and keeps the claim alive with a heartbeat. A worker that dies leaves a claim that expires; the sweep finds such
-- workflows across tenants and sends them to the workers again. This function lists them by id only; each is then
-- re-read and re-enqueued inside its own tenant (Db.withTenant), under the ordinary policy.

-- The function runs as the schema owner, which row-level security binds too (FORCE): let it read the table.
DO $$
BEGIN
  EXECUTE format('CREATE POLICY workflows_owner_sweep ON agents.workflows FOR SELECT TO %I USING (true)', current_user);
END
$$;

-- Company and people searches still to run (processing, continuing, stopping) whose claim expired, or that no
-- worker claimed for longer than `p_unclaimed_ms` (a message still on its way is not sent twice at once).
CREATE FUNCTION agents.workflows_to_resume(p_unclaimed_ms integer, p_limit integer)
RETURNS TABLE (tenant_id text, thread_id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT w.tenant_id, w.thread_id FROM agents.workflows w
   WHERE w.kind IN ('company_search', 'people_search')
     AND w.status IN ('processing', 'continuing', 'stopping')
     AND ((w.claimed_until IS NOT NULL AND w.claimed_until < now())
       OR (w.claimed_until IS NULL AND w.updated_at < now() - make_interval(secs => greatest(p_unclaimed_ms, 0) / 1000.0)))
   ORDER BY w.updated_at
   LIMIT least(greatest(p_limit, 1), 1000)
$$;

-- Only the application role (granted EXECUTE on the schema's functions by every migration run) may call it.
REVOKE ALL ON FUNCTION agents.workflows_to_resume(integer, integer) FROM PUBLIC;

CREATE INDEX workflows_running_idx ON agents.workflows (updated_at)
  WHERE status IN ('processing', 'continuing', 'stopping');
