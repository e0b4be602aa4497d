-- Key compaction, as migrations/0021_key_compaction.sql on SQLite (read the reasons there).
ALTER TABLE streams ADD COLUMN compact boolean NOT NULL DEFAULT false;
ALTER TABLE streams ADD COLUMN tombstone_retention_seconds double precision;
ALTER TABLE streams ADD COLUMN compacted_at bigint;
ALTER TABLE streams ADD COLUMN compacted_events bigint NOT NULL DEFAULT 0;
