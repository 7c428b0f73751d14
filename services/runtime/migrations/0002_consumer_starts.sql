-- The start journal of the Kafka consumers (src/bus/start-journal.ts): per consumer group and partition, the offset
-- of the message a consumer last started on and how many times in a row one started there. A message whose handling
-- kills the process (a native crash, an out-of-memory kill, a hang until SIGKILL) is met again by every restart:
-- the count grows until the bus dead-letters it without calling the handler. A graceful stop deletes its rows.
-- Group and topic are the names on the broker (with the install's prefix). Not tenant-scoped: the bus reads and
-- writes it outside any tenant, like the outbox; one row per group and partition, so it stays small.
CREATE TABLE consumer_starts (
  consumer_group text        NOT NULL CHECK (consumer_group <> ''),
  topic          text        NOT NULL CHECK (topic <> ''),
  partition      integer     NOT NULL CHECK (partition >= 0),
  message_offset bigint      NOT NULL CHECK (message_offset >= 0),
  starts         integer     NOT NULL CHECK (starts >= 1),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer_group, topic, partition)
);
