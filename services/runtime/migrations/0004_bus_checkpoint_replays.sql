-- `replays` (0003) was added to 0003 after 0003 had shipped: a database that applied the earlier 0003 never got the
-- column, and its relay could not read its checkpoint again (every outbox message then waited for good). Added here
-- where it is missing; nothing changes where 0003 already made it.
ALTER TABLE bus_checkpoint ADD COLUMN IF NOT EXISTS replays integer NOT NULL DEFAULT 0 CHECK (replays >= 0);
