-- Blobs written before the record that owns them commits (an upload's bytes, then its row): a crash between the two
-- left bytes no record names, unmasked upload content among them, for good. A writer announces the key here first (its
-- own statement, committed), deletes the row in the transaction that records the owner, and each service sweeps the
-- keys it announced long ago and never settled: their bytes are deleted. Not tenant-scoped: the sweep reads every row.
CREATE TABLE blob_intents (
  owner       text        NOT NULL CHECK (owner <> ''),
  tenant_id   text        NOT NULL,
  blob_key    text        NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, blob_key)
);
CREATE INDEX blob_intents_owner_created ON blob_intents (owner, created_at);
