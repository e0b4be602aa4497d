-- Events removed from inside a stream's retained window: as SQLite's
-- migrations/0019_event_holes.sql (read the reasons there).
CREATE TABLE event_holes (
    stream_id bigint NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    through_seq bigint NOT NULL,
    from_seq bigint NOT NULL,
    hash bytea,
    PRIMARY KEY (stream_id, through_seq)
);

ALTER TABLE streams ADD COLUMN removed_events bigint NOT NULL DEFAULT 0;
ALTER TABLE streams ADD COLUMN removed_through bigint NOT NULL DEFAULT 0;
