-- Tables: user-defined tables whose rows live in one shared table_rows relation as jsonb.
-- Per-table indexes (unique columns, typed number/date columns) are partial expression indexes on
-- table_rows created by src/tables/store.ts when a column is added; their names start with
-- 't' || <32 hex of the table id> || '_' so that deleting a table drops them all.

CREATE TABLE tables (
  id text PRIMARY KEY CHECK (id ~ '^tbl_[0-9a-f]{32}$'),
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  -- Column[]: [{name, type, required, unique, options?}], in display order.
  columns jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- Bumped by every schema change; row writes validated against an older schema retry.
  schema_version integer NOT NULL DEFAULT 1,
  row_count integer NOT NULL DEFAULT 0 CHECK (row_count >= 0),
  -- The plan's rows-per-table limit, set when the table is created; enforced atomically on insert.
  max_rows integer NOT NULL CHECK (max_rows >= 0),
  -- Sum of table_rows.bytes, maintained in the same transactions as the rows.
  bytes bigint NOT NULL DEFAULT 0,
  next_position bigint NOT NULL DEFAULT 0,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  UNIQUE (workspace_id, name)
);
CREATE INDEX tables_workspace_idx ON tables (workspace_id, created_at, id);

CREATE TABLE table_rows (
  id text PRIMARY KEY,
  table_id text NOT NULL REFERENCES tables(id) ON DELETE CASCADE,
  -- Column name -> value; null values are not stored (an absent key is null).
  data jsonb NOT NULL,
  position bigint NOT NULL,
  bytes integer GENERATED ALWAYS AS (octet_length(data::text)) STORED,
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
);
CREATE UNIQUE INDEX table_rows_order_idx ON table_rows (table_id, position);
-- Equality filters compile to data @> '{"col": value}', which this index answers.
CREATE INDEX table_rows_data_idx ON table_rows USING gin (data jsonb_path_ops);

-- Date cells are stored as 'YYYY-MM-DD' (midnight UTC) or as an ISO 8601 instant ending in 'Z',
-- so the conversion does not depend on the session's time zone or date style.
CREATE FUNCTION weft_table_ts(v text) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT CASE WHEN length(v) = 10 THEN (v || 'T00:00:00Z')::timestamptz ELSE v::timestamptz END $$;
