-- Idempotent key issuance through the internal admin API: the caller may send a token of its own with a create
-- (or rotate) call and record it before the call. A repeated call with the same token creates nothing, and the
-- key a call made can be found by its token even when the answer was lost (a caller killed mid-call).
-- Nullable: keys made by the portal, the CLI or without a token have none. Unique per tenant where present.

ALTER TABLE gateway.api_keys
  ADD COLUMN client_token text CHECK (client_token IS NULL OR length(client_token) BETWEEN 1 AND 128);

CREATE UNIQUE INDEX api_keys_client_token ON gateway.api_keys (tenant_id, client_token) WHERE client_token IS NOT NULL;
