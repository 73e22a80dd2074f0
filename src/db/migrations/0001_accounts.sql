CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE users (
  id uuid PRIMARY KEY,
  email text NOT NULL UNIQUE,
  name text NOT NULL,
  is_admin boolean NOT NULL DEFAULT false,
  plan text NOT NULL DEFAULT 'free',
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE workspaces (
  id uuid PRIMARY KEY,
  name text NOT NULL UNIQUE,
  owner_id uuid NOT NULL REFERENCES users(id),
  allow_personal_keys boolean NOT NULL DEFAULT true,
  plan text NOT NULL DEFAULT 'free',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('admin', 'write', 'read')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  key_hash text NOT NULL UNIQUE,
  display_suffix text NOT NULL,
  name text NOT NULL,
  type text NOT NULL CHECK (type IN ('personal', 'workspace')),
  user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  workspace_id uuid REFERENCES workspaces(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz,
  CHECK ((type = 'workspace') = (workspace_id IS NOT NULL))
);
CREATE INDEX api_keys_workspace_idx ON api_keys (workspace_id);
CREATE INDEX api_keys_user_idx ON api_keys (user_id);

CREATE TABLE audit_logs (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  actor_id uuid,
  actor_key_id uuid,
  action text NOT NULL,
  resource_type text NOT NULL,
  resource_id text,
  resource_name text,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
);
CREATE INDEX audit_logs_page_idx ON audit_logs (workspace_id, created_at DESC, id DESC);
