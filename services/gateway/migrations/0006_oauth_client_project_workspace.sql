-- An OAuth client of one project lives in that project's workspace, as an API key of one project does (a key's
-- workspace has always been its project's): its requests are pinned there. Clients made before kept no workspace
-- (or another one), so `?workspace_id=` could take them into any workspace of the tenant. Each is given its
-- project's workspace here. Backfilled as the owner; forced row-level security would hide every row from it, so it is
-- lifted for the duration of this transaction only.
ALTER TABLE gateway.oauth_clients NO FORCE ROW LEVEL SECURITY;
ALTER TABLE gateway.projects NO FORCE ROW LEVEL SECURITY;
UPDATE gateway.oauth_clients c
   SET workspace_id = p.workspace_id
  FROM gateway.projects p
 WHERE c.tenant_id = p.tenant_id AND c.project_id = p.project_id AND c.workspace_id IS DISTINCT FROM p.workspace_id;
ALTER TABLE gateway.oauth_clients FORCE ROW LEVEL SECURITY;
ALTER TABLE gateway.projects FORCE ROW LEVEL SECURITY;
