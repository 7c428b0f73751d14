-- Connector indexing: where a pair's documents go, its index attempts, what each run kept per document, and the
-- schedule the scheduler reads across tenants. See "Indexing" in docs/core.md.

-- Where a pair's documents are indexed (the creating identity's workspace and memory) and who the indexer acts for
-- when it writes them (the creating administrator's credential kind and subject).
ALTER TABLE core.cc_pairs
  ADD COLUMN workspace_id text NOT NULL DEFAULT '',
  ADD COLUMN memory_id text NOT NULL DEFAULT '',
  ADD COLUMN creator_credential text NOT NULL DEFAULT '',
  ADD COLUMN creator_subject text NOT NULL DEFAULT '',
  ADD COLUMN last_successful_index_time timestamptz,
  ADD COLUMN last_pruned timestamptz;

-- One run of a pair: `load` reads everything, `poll` what changed since the last success, `delete` removes the
-- pair's documents and then the pair. At most one live (not_started or in_progress) attempt per pair.
CREATE TABLE core.index_attempts (
  tenant_id text NOT NULL,
  id integer GENERATED ALWAYS AS IDENTITY,
  cc_pair_id integer NOT NULL,
  kind text NOT NULL CHECK (kind IN ('load', 'poll', 'delete')),
  -- After the run, list what still exists and remove the rest.
  prune boolean NOT NULL DEFAULT false,
  trigger text NOT NULL CHECK (trigger IN ('schedule', 'manual', 'deletion')),
  status text NOT NULL DEFAULT 'not_started'
    CHECK (status IN ('not_started', 'in_progress', 'success', 'completed_with_errors', 'failed', 'canceled')),
  new_docs_indexed integer NOT NULL DEFAULT 0,
  docs_unchanged integer NOT NULL DEFAULT 0,
  docs_skipped integer NOT NULL DEFAULT 0,
  docs_removed integer NOT NULL DEFAULT 0,
  -- The pair's documents when the attempt ended.
  total_docs_indexed integer,
  -- Why the run stopped (a limit, a failure); never an address or a secret.
  error_msg text,
  time_created timestamptz NOT NULL DEFAULT now(),
  time_started timestamptz,
  time_updated timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX index_attempts_pair_idx ON core.index_attempts (tenant_id, cc_pair_id, id DESC);
CREATE UNIQUE INDEX index_attempts_live_idx ON core.index_attempts (tenant_id, cc_pair_id) WHERE status IN ('not_started', 'in_progress');

-- What the indexer keeps per document of a pair between runs: the memory document it became and the validators the
-- source answered (handed back to the next poll, so an unchanged document is neither fetched again nor re-embedded).
CREATE TABLE core.connector_documents (
  tenant_id text NOT NULL,
  cc_pair_id integer NOT NULL,
  -- The source's id of the document (a canonical URL, a file location, a Drive file id).
  doc_key text NOT NULL,
  -- The memory document (graph) it is indexed as.
  doc_id text,
  content_hash text NOT NULL,
  etag text,
  last_modified text,
  time_indexed timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, cc_pair_id, doc_key)
);

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['index_attempts', 'connector_documents'] LOOP
    EXECUTE format('ALTER TABLE core.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE core.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY tenant_isolation ON core.%I USING (tenant_id = current_setting(''lore.tenant_id'', true)) '
      'WITH CHECK (tenant_id = current_setting(''lore.tenant_id'', true))', t);
  END LOOP;
END $$;

-- The scheduler's view across tenants: ids and times only (no name, configuration or content), so, like the outbox,
-- it carries no row-level security; every read or write of the pair itself still goes through `withTenant`.
-- A row exists while the pair is ACTIVE or DELETING. `attempt_id` is the live attempt; `heartbeat_at` is when its
-- worker last said it is alive (a running attempt whose heartbeat stopped is failed and run again).
CREATE TABLE core.index_schedule (
  tenant_id text NOT NULL,
  cc_pair_id integer NOT NULL,
  next_run_at timestamptz NOT NULL DEFAULT now(),
  attempt_id integer,
  attempt_running boolean NOT NULL DEFAULT false,
  heartbeat_at timestamptz,
  PRIMARY KEY (tenant_id, cc_pair_id)
);
CREATE INDEX index_schedule_due_idx ON core.index_schedule (next_run_at) WHERE attempt_id IS NULL;
CREATE INDEX index_schedule_running_idx ON core.index_schedule (heartbeat_at) WHERE attempt_running;
