-- Key compaction (CREATE `compact=yes`, `replayctl create --compact`): the stream keeps
-- each key's newest event, and compaction removes the events a newer one of their key
-- superseded, as Kafka's compacted topics do. An event with a key and an empty payload is
-- the key's tombstone, itself removed once it is `tombstone_retention_seconds` old.
-- `compact` is 0 or 1; the retention is NULL where the stream is not compacted.
ALTER TABLE streams ADD COLUMN compact INTEGER NOT NULL DEFAULT 0;
ALTER TABLE streams ADD COLUMN tombstone_retention_seconds REAL;

-- When compaction last went through the whole stream (ms since 1970; NULL: never), and how
-- many events it has removed in all: INFO, the live page and /metrics show them.
ALTER TABLE streams ADD COLUMN compacted_at INTEGER;
ALTER TABLE streams ADD COLUMN compacted_events INTEGER NOT NULL DEFAULT 0;
