-- Embedded mode's bus lives in the process: what it held when the process ended (a stop, a crash) is gone, while the
-- outbox rows it was published from are kept (marked published) until pruned. The relay of such a bus records here,
-- whenever the bus has handled everything, the last outbox row it had published; on the next start it publishes
-- again every row after it (src/outbox/outbox.ts, `volatileBus`). Consumers dedupe on `event-id`, as for Kafka's
-- redeliveries. `replays` counts the starts that published rows again since the checkpoint last moved: a message
-- whose handling ends the process would otherwise be published again on every start, so after a few such starts the
-- relay gives those rows up (logged) and moves the checkpoint past them. One row; not tenant-scoped, like the outbox.
CREATE TABLE bus_checkpoint (
  id         integer     PRIMARY KEY CHECK (id = 1),
  outbox_id  bigint      NOT NULL,
  replays    integer     NOT NULL DEFAULT 0 CHECK (replays >= 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- An install that had no checkpoint before: what it already published counts as handled (its process handled it
-- or lost it before this version existed), so the first start after the upgrade publishes nothing again.
INSERT INTO bus_checkpoint (id, outbox_id) SELECT 1, COALESCE(max(id), 0) FROM outbox WHERE published_at IS NOT NULL;
