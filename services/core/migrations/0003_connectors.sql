-- Connectors, credentials and connector-credential pairs (cc pairs). Every table is tenant-owned: tenant_id on
-- every row, row-level security enabled AND forced, one policy on the `lore.tenant_id` setting that
-- `Db.withTenant` sets per transaction (as in 0001_chat.sql). Integer ids (spec 2), from one sequence per table.

-- What to read and how often. access_type and groups are the defaults of the pairs made from it.
CREATE TABLE core.connectors (
  tenant_id text NOT NULL,
  id integer GENERATED ALWAYS AS IDENTITY,
  name text NOT NULL,
  source text NOT NULL,
  input_type text NOT NULL,
  connector_specific_config jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Seconds between runs, and between prunes (null: never pruned).
  refresh_freq integer NOT NULL,
  prune_freq integer,
  -- Documents older than this are not indexed (null: everything).
  indexing_start timestamptz,
  access_type text NOT NULL DEFAULT 'public' CHECK (access_type IN ('public', 'private')),
  groups integer[] NOT NULL DEFAULT '{}',
  time_created timestamptz NOT NULL DEFAULT now(),
  time_updated timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);

-- The secret a connector reads with. credential_json keeps its keys readable; every value is sealed
-- (`enc:v1:<key id>:...`, AES-256-GCM under LORE_ENCRYPTION_KEYS, bound to tenant, credential id and key).
CREATE TABLE core.credentials (
  tenant_id text NOT NULL,
  id integer GENERATED ALWAYS AS IDENTITY,
  -- The principal that created it: `<credential kind>:<subject>` of the gateway's identity.
  owner text NOT NULL,
  user_email text NOT NULL DEFAULT '',
  source text NOT NULL,
  name text NOT NULL,
  credential_json jsonb NOT NULL DEFAULT '{}'::jsonb,
  admin_public boolean NOT NULL DEFAULT true,
  curator_public boolean NOT NULL DEFAULT false,
  groups integer[] NOT NULL DEFAULT '{}',
  time_created timestamptz NOT NULL DEFAULT now(),
  time_updated timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);

-- A connector read with a credential: what is indexed, by whom it may be seen, and how indexing went.
CREATE TABLE core.cc_pairs (
  tenant_id text NOT NULL,
  id integer GENERATED ALWAYS AS IDENTITY,
  connector_id integer NOT NULL,
  credential_id integer NOT NULL,
  name text NOT NULL,
  access_type text NOT NULL CHECK (access_type IN ('public', 'private')),
  groups integer[] NOT NULL DEFAULT '{}',
  status text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'PAUSED', 'DELETING')),
  num_docs_indexed integer NOT NULL DEFAULT 0,
  in_repeated_error_state boolean NOT NULL DEFAULT false,
  last_index_attempt_status text,
  number_of_index_attempts integer NOT NULL DEFAULT 0,
  time_created timestamptz NOT NULL DEFAULT now(),
  time_updated timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  -- Ids are unique across tenants, so this is unique (connector_id, credential_id).
  UNIQUE (tenant_id, connector_id, credential_id),
  FOREIGN KEY (tenant_id, connector_id) REFERENCES core.connectors (tenant_id, id),
  FOREIGN KEY (tenant_id, credential_id) REFERENCES core.credentials (tenant_id, id)
);
CREATE INDEX cc_pairs_credential_idx ON core.cc_pairs (tenant_id, credential_id);

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['connectors', 'credentials', 'cc_pairs'] LOOP
    EXECUTE format('ALTER TABLE core.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE core.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY tenant_isolation ON core.%I USING (tenant_id = current_setting(''lore.tenant_id'', true)) '
      'WITH CHECK (tenant_id = current_setting(''lore.tenant_id'', true))', t);
  END LOOP;
END $$;
