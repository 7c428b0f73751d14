-- Credits (docs/gateway.md, "Credits"): the gateway owns a tenant's credit_balance; services that meter what a
-- tenant consumes (the agents' workflows) send charges on lore.credits.usage, and the gateway's credits consumer
-- applies each one here, once.

-- Grows with every change of the balance (the admin API setting it, a charge taking credits off), so readers of the
-- balance events (lore.credits.balance) keep the newest whatever order they arrive in.
ALTER TABLE gateway.tenants ADD COLUMN credit_version bigint NOT NULL DEFAULT 0;

-- One row per charge applied: the consumer's processed-events record (a redelivered charge finds its row and changes
-- nothing) and the tenant's ledger. Written in the transaction that takes the credits off the balance. Never pruned:
-- a charge redelivered however late is still recognised.
CREATE TABLE gateway.credit_charges (
  tenant_id     text NOT NULL REFERENCES gateway.tenants (tenant_id) ON DELETE CASCADE,
  event_id      text NOT NULL,
  -- The service that metered it (agents), the caller's serviceId, and the workflow that consumed it.
  source        text NOT NULL,
  service_id    text,
  workflow_id   text NOT NULL,
  workflow_kind text NOT NULL,
  charge        integer NOT NULL,
  credits       bigint NOT NULL CHECK (credits > 0),
  -- The usage this charge prices: {model_tokens, fetches, rows}.
  usage         jsonb NOT NULL,
  -- False when the tenant was not metered (credit_balance NULL): recorded, nothing taken off.
  applied       boolean NOT NULL,
  -- The balance right after this charge (NULL when not applied).
  balance_after bigint,
  occurred_at   timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, event_id)
);
CREATE INDEX credit_charges_tenant_time ON gateway.credit_charges (tenant_id, created_at);

ALTER TABLE gateway.credit_charges ENABLE ROW LEVEL SECURITY;
ALTER TABLE gateway.credit_charges FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON gateway.credit_charges
  USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));
