-- Table write locks (the reference's `locks` object): which kinds of change a table refuses with 423.
-- One array rather than four flags: the kinds are read and written together, and a kind added later needs no
-- new column.
ALTER TABLE tables ADD COLUMN locked text[] NOT NULL DEFAULT '{}'
  CHECK (locked <@ ARRAY['schema', 'insert', 'update', 'delete']::text[]);
