-- User groups (docs/gateway.md, "User groups"): named sets of a tenant's users. Connectors, credentials and cc pairs
-- name groups by integer id (spec 2's `groups`); a private pair's documents reach the users of its groups. Ids come
-- from one identity sequence and are never reused, so a deleted group's id, still named by some pair, grants nobody
-- anything. Both tables are tenant-owned: tenant_id on every row, row-level security enabled AND forced, one policy
-- on the per-transaction setting lore.tenant_id (as in 0001). Nothing looks them up before the tenant is known, so
-- they get no owner_lookup policy and no SECURITY DEFINER function.

-- Memberships name the user by (tenant_id, user_id), so a membership can never join a user of another tenant.
CREATE UNIQUE INDEX users_tenant_user ON gateway.users (tenant_id, user_id);

CREATE TABLE gateway.user_groups (
  tenant_id    text NOT NULL REFERENCES gateway.tenants (tenant_id) ON DELETE CASCADE,
  group_id     integer GENERATED ALWAYS AS IDENTITY,
  name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  time_created timestamptz NOT NULL DEFAULT now(),
  time_updated timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, group_id)
);
-- A name is taken once per tenant, whatever its case.
CREATE UNIQUE INDEX user_groups_name ON gateway.user_groups (tenant_id, lower(name));

CREATE TABLE gateway.user_group_members (
  tenant_id  text NOT NULL,
  group_id   integer NOT NULL,
  user_id    text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, group_id, user_id),
  -- Deleting a group or a user removes the memberships with it.
  FOREIGN KEY (tenant_id, group_id) REFERENCES gateway.user_groups (tenant_id, group_id) ON DELETE CASCADE,
  FOREIGN KEY (tenant_id, user_id) REFERENCES gateway.users (tenant_id, user_id) ON DELETE CASCADE
);
-- The session check reads a user's groups with the account (an index-only scan of this index).
CREATE INDEX user_group_members_user ON gateway.user_group_members (tenant_id, user_id, group_id);

ALTER TABLE gateway.user_groups ENABLE ROW LEVEL SECURITY;
ALTER TABLE gateway.user_groups FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON gateway.user_groups
  USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));

ALTER TABLE gateway.user_group_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE gateway.user_group_members FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON gateway.user_group_members
  USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));
