-- Sessions over websockets (docs/agents.md, "Sessions over websockets"): deep search, web research and the agentic
-- crawler are rows of agents.workflows of kinds deep_search, web_research and agentic_crawler, with their event log
-- (what a reconnecting socket replays from its cursor) and the list their rows go to. A session is prepared with status
-- `ready` and runs (`processing`) only once a client connected; a worker that dies leaves an expired claim, and this
-- function lists such sessions by id only for the sweep, which re-reads and re-enqueues each inside its own tenant.
CREATE FUNCTION agents.sessions_to_resume(p_unclaimed_ms integer, p_limit integer)
RETURNS TABLE (tenant_id text, thread_id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT w.tenant_id, w.thread_id FROM agents.workflows w
   WHERE w.kind IN ('deep_search', 'web_research', 'agentic_crawler')
     AND w.status IN ('processing', 'stopping')
     AND ((w.claimed_until IS NOT NULL AND w.claimed_until < now())
       OR (w.claimed_until IS NULL AND w.updated_at < now() - make_interval(secs => greatest(p_unclaimed_ms, 0) / 1000.0)))
   ORDER BY w.updated_at
   LIMIT least(greatest(p_limit, 1), 1000)
$$;

REVOKE ALL ON FUNCTION agents.sessions_to_resume(integer, integer) FROM PUBLIC;
