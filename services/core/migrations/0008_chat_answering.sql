-- A question being answered (docs/core.md, "Messages and answers"): a turn marks its user message until its answer
-- is stored (the answer's statement clears it), so a second turn on the same session, sent meanwhile, is refused
-- (409) rather than stored under a question that has no answer yet. A turn whose process died leaves the mark to
-- expire: until then the question is taken for one being answered.
ALTER TABLE core.chat_messages ADD COLUMN answering_until timestamptz;
