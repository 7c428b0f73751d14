-- Durable workflows (docs/agents.md, "Workflows"): every list build, enrichment, CSV import and seed run is a row of
-- agents.workflows with an append-only event log, and the lists they fill. Every table is tenant-owned: tenant_id on
-- every row, row-level security enabled AND forced, one policy on the `lore.tenant_id` setting of `Db.withTenant`.

CREATE TABLE agents.workflows (
  tenant_id text NOT NULL,
  thread_id uuid NOT NULL,
  -- company_search, people_search, csv_import, seed.
  kind text NOT NULL,
  -- `<credential kind>:<subject>` of the principal that started it.
  owner text NOT NULL,
  -- The spec's status words (processing, continuing, stopping, stopped, completed, error, and the CSV import's).
  status text NOT NULL,
  current_step text NOT NULL DEFAULT '',
  prompt text NOT NULL DEFAULT '',
  -- Criteria, category, goal, title, description, budgets and checkpoints: the workflow's own document.
  state jsonb NOT NULL DEFAULT '{}'::jsonb,
  total_target integer NOT NULL DEFAULT 25,
  error_message text,
  -- The list this workflow fills (agents.lists), once it has one.
  list_id uuid,
  -- Set by stop; a worker checks it between steps and ends the run.
  stop_requested boolean NOT NULL DEFAULT false,
  -- A worker's claim on the run: who runs it and until when it counts as alive.
  claimed_by text,
  claimed_until timestamptz,
  -- The next event's sequence number.
  next_seq bigint NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, thread_id)
);
CREATE INDEX workflows_owner_idx ON agents.workflows (tenant_id, owner, kind, created_at DESC);

-- The append-only log of a workflow: what SSE clients replay (`Last-Event-ID` is `<seq>`).
CREATE TABLE agents.workflow_events (
  tenant_id text NOT NULL,
  thread_id uuid NOT NULL,
  seq bigint NOT NULL,
  type text NOT NULL,
  data jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, thread_id, seq),
  FOREIGN KEY (tenant_id, thread_id) REFERENCES agents.workflows (tenant_id, thread_id) ON DELETE CASCADE
);

-- Saved lists (getLists): one per list-building workflow or CSV import.
CREATE TABLE agents.lists (
  tenant_id text NOT NULL,
  list_id uuid NOT NULL,
  thread_id uuid,
  owner text NOT NULL,
  name text NOT NULL DEFAULT '',
  description text NOT NULL DEFAULT '',
  -- company_search, people_search, csv_import.
  list_type text NOT NULL,
  status text NOT NULL DEFAULT 'processing',
  -- The list's columns (the table structure's `columns`).
  columns jsonb NOT NULL DEFAULT '[]'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, list_id)
);
CREATE INDEX lists_owner_idx ON agents.lists (tenant_id, owner, created_at DESC);

-- A list's rows. `entity_key` (a company's domain, a person's profile URL, an imported row's number) is unique per
-- list, so a worker that resumes after a crash writes no duplicate.
CREATE TABLE agents.list_rows (
  tenant_id text NOT NULL,
  list_id uuid NOT NULL,
  row_id text NOT NULL,
  entity_key text NOT NULL,
  position integer NOT NULL,
  -- column id → cell {row_id, column_id, value, status, metadata, expandable}
  cells jsonb NOT NULL DEFAULT '{}'::jsonb,
  step_source text NOT NULL DEFAULT '',
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, list_id, row_id),
  UNIQUE (tenant_id, list_id, entity_key),
  FOREIGN KEY (tenant_id, list_id) REFERENCES agents.lists (tenant_id, list_id) ON DELETE CASCADE
);
CREATE INDEX list_rows_position_idx ON agents.list_rows (tenant_id, list_id, position);

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['workflows', 'workflow_events', 'lists', 'list_rows'] LOOP
    EXECUTE format('ALTER TABLE agents.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE agents.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY tenant_isolation ON agents.%I USING (tenant_id = current_setting(''lore.tenant_id'', true)) '
      'WITH CHECK (tenant_id = current_setting(''lore.tenant_id'', true))', t);
  END LOOP;
END $$;
