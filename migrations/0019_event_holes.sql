-- Events removed from inside a stream's retained window (by their expiry),
-- where retention only ever removed the oldest. Each row is one hole, `from_seq` through
-- `through_seq`, and keeps the chain link (`hash`) of the hole's last event: the event after
-- the hole was hashed from it, so the chain is still checked across the hole, and a row
-- removed without its hole (by hand) still breaks it. Adjacent holes are one row, so a
-- stream has at most one hole per event it kept.
CREATE TABLE event_holes (
    stream_id INTEGER NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    through_seq INTEGER NOT NULL,
    from_seq INTEGER NOT NULL,
    hash BLOB,
    PRIMARY KEY (stream_id, through_seq)
) WITHOUT ROWID;

-- How many events of the window are holes (so the stream's count of events is its window
-- less these), and the highest sequence number ever removed from inside it (live readers'
-- recent events in memory are dropped up to there).
ALTER TABLE streams ADD COLUMN removed_events INTEGER NOT NULL DEFAULT 0;
ALTER TABLE streams ADD COLUMN removed_through INTEGER NOT NULL DEFAULT 0;
