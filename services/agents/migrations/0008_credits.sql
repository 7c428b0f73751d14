-- Credits (docs/agents.md, "Credits"): what each workflow consumed, priced and charged to the tenant's balance,
-- which the gateway owns. Usage is recorded in the checkpoint transaction that records the work (so exactly once,
-- whatever worker kills and resumes happen), and every charge is an outbox message on lore.credits.usage written
-- in that same transaction.

-- The workflow's usage totals over all its runs ({model_tokens, fetches, rows}), the totals its last charge
-- priced, the credits charged so far and how many charges there were.
ALTER TABLE agents.workflows ADD COLUMN usage_total jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE agents.workflows ADD COLUMN usage_billed jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE agents.workflows ADD COLUMN credits_used bigint NOT NULL DEFAULT 0;
ALTER TABLE agents.workflows ADD COLUMN usage_charges integer NOT NULL DEFAULT 0;

-- Every charge, as sent: attributed to (tenant, serviceId, workflow).
CREATE TABLE agents.usage_charges (
  tenant_id   text NOT NULL,
  thread_id   uuid NOT NULL,
  -- 1, 2, 3 … per workflow.
  charge      integer NOT NULL,
  event_id    text NOT NULL,
  kind        text NOT NULL,
  service_id  text,
  -- The usage this charge prices (since the previous charge) and the workflow's totals then.
  usage       jsonb NOT NULL,
  usage_total jsonb NOT NULL,
  credits     bigint NOT NULL CHECK (credits > 0),
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, thread_id, charge),
  FOREIGN KEY (tenant_id, thread_id) REFERENCES agents.workflows (tenant_id, thread_id) ON DELETE CASCADE
);
CREATE INDEX usage_charges_service ON agents.usage_charges (tenant_id, service_id, created_at);

-- The tenant's balance as the gateway last announced it (lore.credits.balance), the highest version kept: a running
-- workflow ends when it is used up (metered and at or below zero). No row: nothing announced, not used up.
CREATE TABLE agents.tenant_credits (
  tenant_id      text PRIMARY KEY,
  credit_balance bigint,
  version        bigint NOT NULL,
  updated_at     timestamptz NOT NULL DEFAULT now()
);

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['usage_charges', 'tenant_credits'] LOOP
    EXECUTE format('ALTER TABLE agents.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE agents.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY tenant_isolation ON agents.%I USING (tenant_id = current_setting(''lore.tenant_id'', true)) '
      'WITH CHECK (tenant_id = current_setting(''lore.tenant_id'', true))', t);
  END LOOP;
END $$;
