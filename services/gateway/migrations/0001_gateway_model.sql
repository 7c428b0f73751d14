-- The gateway's model: tenants, workspaces, memories, projects, users, credentials.
-- Every tenant-owned table carries tenant_id, has row-level security enabled AND forced, and one policy keyed on
-- the per-transaction setting lore.tenant_id. Lookups made before the tenant is known (a key hash, a hostname, an
-- e-mail address, a refresh token) go through the narrow SECURITY DEFINER functions at the end of this file.

CREATE TABLE gateway.tenants (
  tenant_id            text PRIMARY KEY,
  name                 text NOT NULL,
  plan                 text NOT NULL,
  -- NULL: the tenant is not metered. Otherwise metered routes need a positive balance.
  credit_balance       bigint,
  default_workspace_id text,
  active_workspace_id  text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE gateway.workspaces (
  tenant_id         text NOT NULL REFERENCES gateway.tenants (tenant_id) ON DELETE CASCADE,
  workspace_id      text PRIMARY KEY,
  name              text NOT NULL,
  slug              text NOT NULL,
  primary_memory_id text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, slug)
);
CREATE INDEX workspaces_tenant ON gateway.workspaces (tenant_id);

CREATE TABLE gateway.memories (
  tenant_id    text NOT NULL REFERENCES gateway.tenants (tenant_id) ON DELETE CASCADE,
  memory_id    text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES gateway.workspaces (workspace_id) ON DELETE CASCADE,
  name         text NOT NULL,
  hostname     text NOT NULL,
  -- Set when the memory was deleted with retain_data=true: its keys are revoked and its host is released.
  deleted_at   timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
-- A hostname belongs to at most one live memory across the whole platform.
CREATE UNIQUE INDEX memories_hostname ON gateway.memories (hostname) WHERE deleted_at IS NULL;
CREATE INDEX memories_tenant ON gateway.memories (tenant_id, workspace_id);

CREATE TABLE gateway.projects (
  tenant_id    text NOT NULL REFERENCES gateway.tenants (tenant_id) ON DELETE CASCADE,
  project_id   text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES gateway.workspaces (workspace_id) ON DELETE CASCADE,
  name         text NOT NULL,
  slug         text NOT NULL,
  description  text NOT NULL DEFAULT '',
  icon         text NOT NULL DEFAULT '',
  created_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, workspace_id, slug)
);

CREATE TABLE gateway.users (
  tenant_id            text NOT NULL REFERENCES gateway.tenants (tenant_id) ON DELETE CASCADE,
  user_id              text PRIMARY KEY,
  email                text NOT NULL,
  password_hash        text NOT NULL,
  role                 text NOT NULL CHECK (role IN ('admin', 'member')),
  -- Session JWTs issued before this instant are rejected (password change, reset, sign-out everywhere).
  sessions_valid_after timestamptz NOT NULL DEFAULT now(),
  disabled_at          timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now()
);
-- One account per e-mail address across the platform: login needs no tenant hint.
CREATE UNIQUE INDEX users_email ON gateway.users (lower(email));

CREATE TABLE gateway.api_keys (
  tenant_id        text NOT NULL REFERENCES gateway.tenants (tenant_id) ON DELETE CASCADE,
  key_id           text PRIMARY KEY,
  type             text NOT NULL CHECK (type IN ('live', 'test', 'ephemeral', 'memory')),
  name             text NOT NULL,
  key_hash         text NOT NULL UNIQUE,
  prefix           text NOT NULL,
  memory_id        text,
  workspace_id     text,
  project_id       text,
  scopes           jsonb NOT NULL DEFAULT '{}'::jsonb,
  ip_allowlist     text[] NOT NULL DEFAULT '{}',
  app_permissions  jsonb NOT NULL DEFAULT '{}'::jsonb,
  rate_limit       jsonb,
  expires_at       timestamptz,
  revoked_at       timestamptz,
  replaced_by      text,
  rotated_from     text,
  created_by       text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  CHECK (type <> 'memory' OR memory_id IS NOT NULL)
);
CREATE INDEX api_keys_tenant ON gateway.api_keys (tenant_id, created_at);
CREATE INDEX api_keys_memory ON gateway.api_keys (memory_id) WHERE memory_id IS NOT NULL;

CREATE TABLE gateway.refresh_tokens (
  tenant_id  text NOT NULL REFERENCES gateway.tenants (tenant_id) ON DELETE CASCADE,
  token_id   text PRIMARY KEY,
  user_id    text NOT NULL REFERENCES gateway.users (user_id) ON DELETE CASCADE,
  token_hash text NOT NULL UNIQUE,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refresh_tokens_user ON gateway.refresh_tokens (user_id);

CREATE TABLE gateway.oauth_clients (
  tenant_id    text NOT NULL REFERENCES gateway.tenants (tenant_id) ON DELETE CASCADE,
  client_id    text PRIMARY KEY,
  name         text NOT NULL,
  secret_hash  text NOT NULL,
  scopes       text[] NOT NULL,
  workspace_id text,
  project_id   text,
  ip_allowlist text[] NOT NULL DEFAULT '{}',
  revoked_at   timestamptz,
  created_by   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE gateway.oauth_tokens (
  tenant_id  text NOT NULL REFERENCES gateway.tenants (tenant_id) ON DELETE CASCADE,
  token_id   text PRIMARY KEY,
  client_id  text NOT NULL REFERENCES gateway.oauth_clients (client_id) ON DELETE CASCADE,
  token_hash text NOT NULL UNIQUE,
  scopes     text[] NOT NULL,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_tokens_expiry ON gateway.oauth_tokens (expires_at);

-- Row-level security: enabled and forced on every tenant-owned table, one tenant policy each, plus a read-only
-- policy for the schema owner so the SECURITY DEFINER lookups below can find a row before the tenant is known.
-- The application role is not the owner and gets nothing from that second policy.
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['tenants', 'workspaces', 'memories', 'projects', 'users', 'api_keys', 'refresh_tokens', 'oauth_clients', 'oauth_tokens'] LOOP
    EXECUTE format('ALTER TABLE gateway.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE gateway.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY tenant_isolation ON gateway.%I USING (tenant_id = current_setting(''lore.tenant_id'', true)) WITH CHECK (tenant_id = current_setting(''lore.tenant_id'', true))',
      t);
    EXECUTE format('CREATE POLICY owner_lookup ON gateway.%I FOR SELECT TO %I USING (true)', t, current_user);
  END LOOP;
END
$$;

-- Lookups by secret: the caller already holds the plaintext and passes only its SHA-256.
CREATE FUNCTION gateway.auth_key(p_hash text)
RETURNS TABLE (tenant_id text, key_id text, key_hash text, type text, name text, memory_id text, workspace_id text,
               project_id text, scopes jsonb, ip_allowlist text[], app_permissions jsonb, rate_limit jsonb,
               expires_at timestamptz, revoked_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT k.tenant_id, k.key_id, k.key_hash, k.type, k.name, k.memory_id, k.workspace_id, k.project_id, k.scopes,
         k.ip_allowlist, k.app_permissions, k.rate_limit, k.expires_at, k.revoked_at
    FROM gateway.api_keys k WHERE k.key_hash = p_hash
$$;

CREATE FUNCTION gateway.auth_oauth_token(p_hash text)
RETURNS TABLE (tenant_id text, token_id text, client_id text, token_hash text, scopes text[], expires_at timestamptz,
               workspace_id text, project_id text, ip_allowlist text[], client_revoked_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT t.tenant_id, t.token_id, t.client_id, t.token_hash, t.scopes, t.expires_at, c.workspace_id, c.project_id,
         c.ip_allowlist, c.revoked_at
    FROM gateway.oauth_tokens t JOIN gateway.oauth_clients c ON c.client_id = t.client_id
   WHERE t.token_hash = p_hash
$$;

CREATE FUNCTION gateway.oauth_client_for_token(p_client_id text)
RETURNS TABLE (tenant_id text, client_id text, secret_hash text, scopes text[], revoked_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT c.tenant_id, c.client_id, c.secret_hash, c.scopes, c.revoked_at FROM gateway.oauth_clients c WHERE c.client_id = p_client_id
$$;

CREATE FUNCTION gateway.refresh_token_owner(p_hash text)
RETURNS TABLE (tenant_id text, token_id text, user_id text, token_hash text, expires_at timestamptz, revoked_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT r.tenant_id, r.token_id, r.user_id, r.token_hash, r.expires_at, r.revoked_at FROM gateway.refresh_tokens r WHERE r.token_hash = p_hash
$$;

-- Lookups by public identifiers: they reveal only which tenant owns a host, memory id or login e-mail.
CREATE FUNCTION gateway.memory_by_hostname(p_host text)
RETURNS TABLE (tenant_id text, memory_id text, workspace_id text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT m.tenant_id, m.memory_id, m.workspace_id FROM gateway.memories m WHERE m.hostname = lower(p_host) AND m.deleted_at IS NULL
$$;

CREATE FUNCTION gateway.memory_owner(p_memory_id text)
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT m.tenant_id FROM gateway.memories m WHERE m.memory_id = p_memory_id
$$;

CREATE FUNCTION gateway.login_user(p_email text)
RETURNS TABLE (tenant_id text, user_id text, password_hash text, role text, disabled_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT u.tenant_id, u.user_id, u.password_hash, u.role, u.disabled_at FROM gateway.users u WHERE lower(u.email) = lower(p_email)
$$;

REVOKE ALL ON FUNCTION gateway.auth_key(text), gateway.auth_oauth_token(text), gateway.oauth_client_for_token(text),
  gateway.refresh_token_owner(text), gateway.memory_by_hostname(text), gateway.memory_owner(text), gateway.login_user(text) FROM PUBLIC;
