-- Deep research (docs/agents.md, "Deep research"): a research run is a workflow of kind `deep_research` in
-- agents.workflows, with its event log; nothing new is stored. What a dead worker leaves behind is found by this
-- function, beside migration 0003's for the searches: running research whose claim expired, or that no worker claimed
-- for longer than `p_unclaimed_ms`. Research waiting for the caller's clarification is not running and never listed.
-- It lists tenant and thread ids only; each is then re-read and re-enqueued inside its own tenant (Db.withTenant).
-- It reads agents.workflows through migration 0003's owner policy (workflows_owner_sweep).

CREATE FUNCTION agents.research_to_resume(p_unclaimed_ms integer, p_limit integer)
RETURNS TABLE (tenant_id text, thread_id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT w.tenant_id, w.thread_id FROM agents.workflows w
   WHERE w.kind = 'deep_research'
     AND w.status IN ('processing', 'continuing', 'stopping')
     AND ((w.claimed_until IS NOT NULL AND w.claimed_until < now())
       OR (w.claimed_until IS NULL AND w.updated_at < now() - make_interval(secs => greatest(p_unclaimed_ms, 0) / 1000.0)))
   ORDER BY w.updated_at
   LIMIT least(greatest(p_limit, 1), 1000)
$$;

-- Only the application role (granted EXECUTE on the schema's functions by every migration run) may call it.
REVOKE ALL ON FUNCTION agents.research_to_resume(integer, integer) FROM PUBLIC;
