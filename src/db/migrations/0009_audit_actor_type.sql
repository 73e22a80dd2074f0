-- Which kind of caller acted: a personal key, a workspace key (acting as its workspace, never as a user), or the CLI.
ALTER TABLE audit_logs ADD COLUMN actor_type text CHECK (actor_type IN ('personal_key', 'workspace_key', 'cli'));
