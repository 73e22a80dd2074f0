-- The dashboard's sign-in (src/sessions/). Users get a password (scrypt, in the self-describing form
-- "scrypt$<log2 N>$<r>$<p>$<salt>$<hash>"; NULL: cannot sign in, keys only) and a flag that the
-- dashboard asks for a new one (one-time passwords printed by setup and reset-password).
ALTER TABLE users ADD COLUMN password_hash text;
ALTER TABLE users ADD COLUMN must_change_password boolean NOT NULL DEFAULT false;
-- Sign-in looks the email up case-insensitively.
CREATE INDEX users_email_lower_idx ON users (lower(email));

-- A signed-in browser. The cookie carries a random token; only its SHA-256 is stored, so a copy of the
-- table signs nobody in. The CSRF token is handed to the page and compared in constant time.
CREATE TABLE sessions (
  id uuid PRIMARY KEY,
  token_hash text NOT NULL UNIQUE,
  user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  -- Slides with use (idle timeout), never past created_at plus the maximum lifetime.
  expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_expires_idx ON sessions (expires_at);

-- Failed sign-ins per email and per client address within a window: past a limit, sign-in answers 429.
-- In the database, so every API process counts the same failures.
CREATE TABLE login_failures (
  key text PRIMARY KEY,
  failures integer NOT NULL,
  window_start timestamptz NOT NULL
);
CREATE INDEX login_failures_window_idx ON login_failures (window_start);

-- Actions taken in the dashboard are recorded as the signed-in user's, with the session's id.
ALTER TABLE audit_logs DROP CONSTRAINT audit_logs_actor_type_check;
ALTER TABLE audit_logs ADD CONSTRAINT audit_logs_actor_type_check CHECK (actor_type IN ('personal_key', 'workspace_key', 'cli', 'session'));
