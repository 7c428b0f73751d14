-- The company and people directory (docs/agents.md, "Directory and database search") and the CSV import's resume
-- sweep (docs/agents.md, "CSV import"). Every table is tenant-owned: tenant_id on every row, row-level security
-- enabled AND forced, one policy on the `lore.tenant_id` setting of `Db.withTenant`.

-- A tenant's own company and person records: fed by CSV imports and finished lists, searched with Atlas-style
-- filters over `data` (services/agents/src/domain/filter.ts).
CREATE TABLE agents.directory (
  tenant_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('company', 'person')),
  -- Stable within the tenant and kind: derived from the record's identity (a company's domain, a person's profile
  -- URL or name and company), so the same entity written twice is one record.
  record_id text NOT NULL,
  data jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(data) = 'object'),
  -- `csv:<list_id>`, `list:<list_id>`, or a URL.
  source text NOT NULL DEFAULT '',
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, kind, record_id)
);
-- Searches answer the most recently updated first, page by page.
CREATE INDEX directory_recent_idx ON agents.directory (tenant_id, kind, updated_at DESC, record_id);
-- Containment and jsonpath look-ups over the documents (`@>`, `@?`).
CREATE INDEX directory_data_idx ON agents.directory USING gin (data jsonb_path_ops);

ALTER TABLE agents.directory ENABLE ROW LEVEL SECURITY;
ALTER TABLE agents.directory FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON agents.directory USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));

-- The CSV import's resume sweep must find imports left `importing` or `processing` (a process stopped mid-import)
-- across tenants. This function lists them by tenant and thread id only; each is then claimed and resumed inside
-- its own tenant (Db.withTenant), under the ordinary policy. It runs as the schema owner, which row-level security
-- binds too (FORCE): a read-only policy lets it look.
DO $$
BEGIN
  EXECUTE format('CREATE POLICY csv_imports_owner_lookup ON agents.workflows FOR SELECT TO %I USING (true)', current_user);
END
$$;

-- CSV imports the sweep must look at, oldest first, at most `p_limit` (1..1000): accepted (`importing`) or under way
-- (`processing`) with a claim absent or expired (to resume), and `analyzing` for longer than `p_stale_analysis` (an
-- upload whose process stopped mid-analysis: to end in `error`).
CREATE FUNCTION agents.csv_imports_to_resume(p_limit integer, p_stale_analysis interval)
RETURNS TABLE (tenant_id text, thread_id uuid, status text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT w.tenant_id, w.thread_id, w.status FROM agents.workflows w
   WHERE w.kind = 'csv_import'
     AND ((w.status IN ('importing', 'processing') AND (w.claimed_until IS NULL OR w.claimed_until < now()))
       OR (w.status = 'analyzing' AND w.updated_at < now() - p_stale_analysis))
   ORDER BY w.updated_at
   LIMIT least(greatest(p_limit, 1), 1000)
$$;

-- Only the application role (granted EXECUTE on the schema's functions by every migration run) may call it.
REVOKE ALL ON FUNCTION agents.csv_imports_to_resume(integer, interval) FROM PUBLIC;

-- The sweep's look-up reads only the imports it may act on.
CREATE INDEX workflows_csv_sweep_idx ON agents.workflows (updated_at)
  WHERE kind = 'csv_import' AND status IN ('analyzing', 'importing', 'processing');
