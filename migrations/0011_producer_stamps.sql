-- Idempotent producers' stamps in the log: a producer's row is no longer written with
-- every batch it publishes in, but behind it (at most a second later, and at once where
-- the log cannot carry the change), and what the row is missing is read back from the
-- stamps of the events after it (ProducerTable.swift).
--
-- The row was one UPDATE and one more page in the WAL per producer per commit: with
-- sixteen producers POSTing to one stream, 7.5 % of the writer's time and most of the
-- gap between producers' appends and plain ones (docs/PERFORMANCE.md). Kafka keeps its
-- producers' state the same way: the sequence numbers in the log's own batches, the
-- producer snapshots written behind and replayed forward at start.

-- `stamp`: NULL for an event without a producer, or for every event of a publish but its
-- first; otherwise LEB128 varints (the producer's `ref`, its epoch, its pseq).
ALTER TABLE event_log ADD COLUMN stamp BLOB;

-- `ref`: the producer's number in stamps, unique in the file; the rows written before
-- this migration are numbered here.
ALTER TABLE producers ADD COLUMN ref INTEGER NOT NULL DEFAULT 0;
UPDATE producers SET ref = numbered.ref
    FROM (SELECT stream_id, producer, row_number() OVER (ORDER BY stream_id, producer) AS ref FROM producers) AS numbered
    WHERE producers.stream_id = numbered.stream_id AND producers.producer = numbered.producer;

-- Per stream, where its producers' rows were last all written: every stamp up to
-- `through_seq` is in them, so a producer's state is its row plus the stamps after that.
-- A stream with producers has one from its first producer's first publish (that row is
-- written at once), or from this migration.
CREATE TABLE producer_snapshots (
    stream_id   INTEGER PRIMARY KEY REFERENCES streams(id) ON DELETE CASCADE,
    through_seq INTEGER NOT NULL
);
-- Every row written so far is current: the streams that have producers start with a
-- snapshot at their last event.
INSERT INTO producer_snapshots (stream_id, through_seq)
    SELECT s.id, s.last_seq FROM streams AS s WHERE EXISTS (SELECT 1 FROM producers AS p WHERE p.stream_id = s.id);
