-- Webhook subscriptions, deliveries and every delivery attempt (spec 1: envelope, events, retry row, limits).
-- All three tables are tenant-owned: row-level security is enabled and forced, and every policy reads the tenant
-- set by Db.withTenant, so neither the gateway nor the webhooks worker can see another tenant's rows.

CREATE TABLE gateway.webhook_subscriptions (
  id                          text PRIMARY KEY,
  tenant_id                   text NOT NULL,
  -- NULL: every workspace of the tenant. Set when a workspace-pinned key created it: only that workspace's events.
  workspace_id                text,
  url                         text NOT NULL CHECK (length(url) <= 2048),
  events                      text[] NOT NULL CHECK (cardinality(events) BETWEEN 1 AND 16),
  description                 text CHECK (description IS NULL OR length(description) <= 500),
  enabled                     boolean NOT NULL DEFAULT true,
  -- 'manual' (PATCH enabled=false) or 'dead_letters' (disabled automatically); NULL while enabled.
  disabled_reason             text CHECK (disabled_reason IS NULL OR disabled_reason IN ('manual', 'dead_letters')),
  disabled_at                 timestamptz,
  secret                      text NOT NULL,
  -- During a rotation overlap deliveries are signed with both secrets; after the overlap only `secret` signs.
  previous_secret             text,
  previous_secret_expires_at  timestamptz,
  -- Dead letters since the last acknowledged delivery; reaching the worker's threshold disables the endpoint.
  consecutive_dead_letters    integer NOT NULL DEFAULT 0,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX webhook_subscriptions_tenant_created ON gateway.webhook_subscriptions (tenant_id, created_at, id);
-- Fan-out looks up the enabled subscriptions of one tenant that want one event kind.
CREATE INDEX webhook_subscriptions_fanout ON gateway.webhook_subscriptions USING gin (events) WHERE enabled;

CREATE TABLE gateway.webhook_deliveries (
  id                 text PRIMARY KEY,
  tenant_id          text NOT NULL,
  subscription_id    text NOT NULL REFERENCES gateway.webhook_subscriptions (id) ON DELETE CASCADE,
  event_id           text NOT NULL,
  event              text NOT NULL,
  -- The exact bytes sent on every attempt, so each attempt's signature covers the same body.
  body               text NOT NULL,
  -- pending: waiting for the first attempt of a cycle; retrying: waiting for a scheduled retry;
  -- succeeded: acknowledged with a 2xx; dead: dead-lettered (retries exhausted or endpoint disabled).
  status             text NOT NULL CHECK (status IN ('pending', 'retrying', 'succeeded', 'dead')),
  -- A replay starts a new cycle; messages of an older cycle are ignored.
  cycle              integer NOT NULL DEFAULT 1,
  -- Step of the next attempt inside the cycle: 0 is the first attempt, 1..5 the retries after 1, 2, 4, 8, 30 s.
  next_step          integer NOT NULL DEFAULT 0,
  next_attempt_at    timestamptz,
  attempts           integer NOT NULL DEFAULT 0,
  -- Held by the worker making the next attempt; a second copy of the same message waits for it instead of sending
  -- the same attempt twice. Expires on its own if that worker dies mid-attempt.
  lease_until        timestamptz,
  last_status_code   integer,
  last_outcome       text,
  dead_reason        text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  succeeded_at       timestamptz,
  dead_at            timestamptz,
  UNIQUE (subscription_id, event_id)
);

CREATE INDEX webhook_deliveries_by_subscription ON gateway.webhook_deliveries (tenant_id, subscription_id, created_at DESC, id);
CREATE INDEX webhook_deliveries_dead ON gateway.webhook_deliveries (tenant_id, subscription_id, dead_at, id) WHERE status = 'dead';

CREATE TABLE gateway.webhook_attempts (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id          text NOT NULL,
  delivery_id        text NOT NULL REFERENCES gateway.webhook_deliveries (id) ON DELETE CASCADE,
  subscription_id    text NOT NULL,
  event_id           text NOT NULL,
  attempt            integer NOT NULL,
  cycle              integer NOT NULL,
  step               integer NOT NULL,
  scheduled_for      timestamptz NOT NULL,
  started_at         timestamptz NOT NULL,
  latency_ms         integer NOT NULL,
  status_code        integer,
  outcome            text NOT NULL CHECK (outcome IN ('succeeded', 'http_error', 'redirect', 'timeout', 'network_error', 'refused')),
  error              text CHECK (error IS NULL OR length(error) <= 1000),
  response_snippet   text CHECK (response_snippet IS NULL OR length(response_snippet) <= 1024),
  UNIQUE (delivery_id, attempt)
);

CREATE INDEX webhook_attempts_by_delivery ON gateway.webhook_attempts (tenant_id, delivery_id, attempt);

ALTER TABLE gateway.webhook_subscriptions ENABLE ROW LEVEL SECURITY;
ALTER TABLE gateway.webhook_subscriptions FORCE ROW LEVEL SECURITY;
CREATE POLICY webhook_subscriptions_tenant ON gateway.webhook_subscriptions
  USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));

ALTER TABLE gateway.webhook_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE gateway.webhook_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY webhook_deliveries_tenant ON gateway.webhook_deliveries
  USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));

ALTER TABLE gateway.webhook_attempts ENABLE ROW LEVEL SECURITY;
ALTER TABLE gateway.webhook_attempts FORCE ROW LEVEL SECURITY;
CREATE POLICY webhook_attempts_tenant ON gateway.webhook_attempts
  USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));
