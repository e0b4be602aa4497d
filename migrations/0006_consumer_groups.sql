-- Consumer groups (docs/PROTOCOL.md, "Consumer groups"): work shared among a group's
-- members, each event to one member at a time. A group is a cursor plus the events it
-- handed out and that were not acknowledged; both are written in the same transaction as
-- the hand-out, the ACK or the NACK that changed them, so a crash never separates "given
-- to a member" from "remembered as given".

-- Retention that waits for groups (CREATE … keep_unacked=<n>): the stream's limits do not
-- remove events one of its groups has not acknowledged, up to n events beyond them.
ALTER TABLE streams ADD COLUMN keep_unacked INTEGER CHECK (keep_unacked IS NULL OR keep_unacked >= 0);

-- One row per (stream, group): its settings, its cursor and its counters.
CREATE TABLE groups (
    stream_id       INTEGER NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    name            TEXT    NOT NULL,
    ack_wait_ms     INTEGER NOT NULL,
    max_deliver     INTEGER,            -- NULL: delivered again for ever
    dead_letter     TEXT,               -- the stream that failed events go to
    delivered_seq   INTEGER NOT NULL,   -- the last event ever handed out
    delivered       INTEGER NOT NULL,   -- events handed out for the first time
    redelivered     INTEGER NOT NULL,   -- ... and again
    dead_lettered   INTEGER NOT NULL,   -- ... and given up on
    created_at      INTEGER NOT NULL,   -- ms since 1970
    PRIMARY KEY (stream_id, name)
) WITHOUT ROWID;

-- The events a group handed out and that were not acknowledged. `member` is NULL while the
-- event is free for any member (its holder left, gave it back, or ran out of time); `due`
-- is then when it may be handed out again, and while held, when it is taken back.
CREATE TABLE group_pending (
    stream_id        INTEGER NOT NULL,
    name             TEXT    NOT NULL,
    seq              INTEGER NOT NULL,
    member           TEXT,
    last_member      TEXT    NOT NULL,
    deliveries       INTEGER NOT NULL,
    due              INTEGER NOT NULL,  -- ms since 1970
    first_delivered  INTEGER NOT NULL,
    last_delivered   INTEGER NOT NULL,
    PRIMARY KEY (stream_id, name, seq),
    FOREIGN KEY (stream_id, name) REFERENCES groups(stream_id, name) ON DELETE CASCADE
) WITHOUT ROWID;

-- Where each dead letter came from, kept beside the dead-letter stream's copy of the
-- payload: `SELECT * FROM dead_letters` in sqlite3, or `replayctl dead-letters`.
CREATE TABLE dead_letters (
    stream        TEXT    NOT NULL,     -- the dead-letter stream
    seq           INTEGER NOT NULL,     -- the copy's sequence number in it
    origin        TEXT    NOT NULL,     -- the stream the event came from
    origin_seq    INTEGER NOT NULL,
    group_name    TEXT    NOT NULL,
    deliveries    INTEGER NOT NULL,
    last_member   TEXT    NOT NULL,
    time          INTEGER NOT NULL,     -- ms since 1970
    PRIMARY KEY (stream, seq)
) WITHOUT ROWID;
