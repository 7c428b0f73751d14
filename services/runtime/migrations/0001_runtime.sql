-- The runtime kit's own tables: the transactional outbox, consumer idempotency markers, and blobs.
-- Applied by runRuntimeMigrations with search_path set to `runtime`.

-- Events written in the same transaction as the state change they announce; the relay publishes them in id
-- order and stamps published_at only after the broker acknowledged. Not tenant-scoped: the relay reads every
-- row. The application role may INSERT, SELECT and UPDATE it, never DELETE (see docs/runtime.md).
CREATE TABLE outbox (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  topic        text        NOT NULL CHECK (topic <> ''),
  key          text        NOT NULL,
  event_id     text        NOT NULL CHECK (event_id <> ''),
  value        jsonb       NOT NULL,
  headers      jsonb       NOT NULL DEFAULT '{}'::jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz
);
-- The relay's scan: only unpublished rows, in id order. Stays small however long the table grows.
CREATE INDEX outbox_pending ON outbox (id) WHERE published_at IS NULL;
CREATE INDEX outbox_published_at ON outbox (published_at) WHERE published_at IS NOT NULL;

-- Published rows older than the retention are removed by this function, which runs with the owner's rights:
-- the application role can prune what was delivered but can never delete an event still waiting for the broker.
CREATE FUNCTION prune_outbox(retention interval) RETURNS bigint
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  WITH gone AS (
    DELETE FROM runtime.outbox WHERE published_at IS NOT NULL AND published_at < now() - retention RETURNING 1
  )
  SELECT count(*) FROM gone
$$;
REVOKE ALL ON FUNCTION prune_outbox(interval) FROM PUBLIC;

-- One row per (consumer, event) whose side effects committed: written in the same transaction as those effects,
-- so a redelivered event is recognised and skipped.
CREATE TABLE processed_events (
  consumer     text        NOT NULL,
  event_id     text        NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id)
);
CREATE INDEX processed_events_processed_at ON processed_events (processed_at);

-- Opaque bytes (uploads) owned by a tenant.
CREATE TABLE blobs (
  tenant_id    text        NOT NULL,
  key          text        NOT NULL,
  content_type text        NOT NULL,
  size         bigint      NOT NULL,
  sha256       text        NOT NULL,
  data         bytea       NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, key)
);
ALTER TABLE blobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE blobs FORCE ROW LEVEL SECURITY;
CREATE POLICY blobs_tenant_isolation ON blobs
  USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));
