-- Answering marks a stopped process left (docs/core.md, "Messages and answers"). Embedded mode is the only process
-- that answers chat turns on its database, so at its start every mark is one whose turn died with the last process
-- (a kill, a crash): it ends them all at once instead of letting each question count as being answered for ten more
-- minutes. The partial index keeps that a read of the marked rows only.
CREATE INDEX chat_messages_answering ON core.chat_messages (message_id) WHERE answering_until IS NOT NULL;

-- Ends every answering mark of every tenant; returns how many.
CREATE FUNCTION core.end_answering_marks()
RETURNS integer
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  WITH ended AS (
    UPDATE core.chat_messages SET answering_until = NULL WHERE answering_until IS NOT NULL RETURNING 1
  )
  SELECT count(*)::integer FROM ended
$$;

-- Only the application role (granted EXECUTE on the schema's functions by every migration run) may call it.
REVOKE ALL ON FUNCTION core.end_answering_marks() FROM PUBLIC;
