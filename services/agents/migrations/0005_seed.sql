-- Seed runs (docs/agents.md, "Seed"): one row per suggestion prompt of a seed type, per tenant. A seed start walks its
-- type's prompts in order and records, for each, the workflow it started and the list it fills; an item already
-- `completed` is skipped by the next start. Tenant-owned like every agents table: row-level security enabled and
-- forced, one policy on the `lore.tenant_id` setting of `Db.withTenant`.

CREATE TABLE agents.seed_statuses (
  tenant_id text NOT NULL,
  -- company or people.
  seed_type text NOT NULL CHECK (seed_type IN ('company', 'people')),
  -- The prompt's id in src/domain/seed.ts (stable across releases).
  prompt_id text NOT NULL,
  prompt text NOT NULL,
  -- pending, processing, list_created, people_workflow_started, completed, failed.
  status text NOT NULL,
  thread_id uuid,
  list_id uuid,
  reason text NOT NULL DEFAULT '',
  -- `<credential kind>:<subject>` of the principal whose seed start wrote it last.
  owner text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, seed_type, prompt_id)
);

ALTER TABLE agents.seed_statuses ENABLE ROW LEVEL SECURITY;
ALTER TABLE agents.seed_statuses FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON agents.seed_statuses USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));
