-- A chat project's sessions by an index of their own (docs/core.md, "Chat projects"): every project a listing
-- answers counts its live sessions, and without this index each count read every session of the tenant (the only
-- indexes began with the tenant and then the owner or the session), so listing 200 projects beside 2,000 sessions
-- read 400,000 rows. The same index serves a project's deletion, which takes its sessions out of it.
CREATE INDEX chat_sessions_project_idx ON core.chat_sessions (tenant_id, project_id) WHERE project_id IS NOT NULL;
