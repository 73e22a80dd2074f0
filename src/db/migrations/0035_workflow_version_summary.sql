-- What answers about a deployed version need, kept beside it by the database so that they never read its
-- definition (up to 2 MB): its block and edge counts (the versions list answers them for up to a hundred versions
-- a page; read from each definition, that page moved 200 MB from the database to the server and parsed it, 7 s an
-- answer with the event loop held), and an MD5 digest of its definition over jsonb's canonical text (keys ordered,
-- duplicates dropped), which the deployment status compares with the draft's (migration 0036). One ALTER: the
-- table is rewritten once. Blocks are counted as the engine's countBlocks counts them, nested ones included.
CREATE FUNCTION weft_definition_block_count(def jsonb) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  WITH RECURSIVE lists(list) AS (
    SELECT def -> 'blocks'
    UNION ALL
    SELECT b -> 'blocks'
      FROM lists, jsonb_array_elements(CASE WHEN jsonb_typeof(lists.list) = 'array' THEN lists.list ELSE '[]'::jsonb END) AS b
     WHERE jsonb_typeof(b -> 'blocks') = 'array'
  )
  SELECT COALESCE(sum(jsonb_array_length(list)), 0)::integer FROM lists WHERE jsonb_typeof(list) = 'array'
$$;

ALTER TABLE workflow_versions
  ADD COLUMN block_count integer GENERATED ALWAYS AS (weft_definition_block_count(definition)) STORED,
  ADD COLUMN edge_count integer GENERATED ALWAYS AS (
    CASE WHEN jsonb_typeof(definition -> 'edges') = 'array' THEN jsonb_array_length(definition -> 'edges') ELSE 0 END
  ) STORED,
  ADD COLUMN definition_md5 text GENERATED ALWAYS AS (md5(definition::text)) STORED;
