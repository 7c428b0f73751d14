-- Erasing a memory (the gateway deleted it without retaining its data). The memory's row is the tombstone: it
-- stays, with every other row of the memory gone, so a late or concurrent write for that memory finds it and
-- refuses (see docs/memory.md, "Deleting a memory").
--   erase_requested_at  set when the erasure starts; while set, nothing may be written to the memory
--   erase_event_id      the `memory.deleted` event being (or last) carried out, so a redelivery resumes it
--   erased_at           set when every row of the memory is gone
-- A `memory.created` event for the same id (the id was reused) clears the three columns.
ALTER TABLE graph.memories ADD COLUMN erase_requested_at timestamptz;
ALTER TABLE graph.memories ADD COLUMN erase_event_id text;
ALTER TABLE graph.memories ADD COLUMN erased_at timestamptz;

-- The erasure finds a memory's uploads (and so their blobs) in bounded batches; the primary key leads with the
-- upload id.
CREATE INDEX uploads_memory_idx ON graph.uploads (tenant_id, memory_id);
