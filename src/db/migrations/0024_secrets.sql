-- Workspace secrets (src/secrets/): values encrypted with AES-256-GCM outside the database, so the
-- table (and any dump of it) holds ciphertext only. The nonce and the ciphertext (with its 16-byte tag
-- appended) are base64 text, read the same by both drivers; key_id is the fingerprint of the key that
-- encrypted the row, so a rotation can tell old rows from new ones and a wrong key is named, not guessed.
CREATE TABLE secrets (
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name text NOT NULL,
  key_id text NOT NULL,
  nonce text NOT NULL,
  ciphertext text NOT NULL,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  last_used_at timestamptz,
  PRIMARY KEY (workspace_id, name)
);
