-- The public base URL a run's links (resume apiUrl/uiUrl) use: the request's host or WEFT_BASE_URL at
-- admission, so async runs and their resumes hand out the same links as sync runs.
ALTER TABLE executions ADD COLUMN link_base text;
