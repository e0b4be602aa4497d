-- replay schema on PostgreSQL, version 1: the same streams as the SQLite store's
-- migrations/0001..0005, for several daemons sharing one database.
-- Migrations are only ever appended: never edit a released file, add the next one.

-- One row per stream, with the counters kept in the same transaction as the events, so a
-- daemon starts by reading one row per stream (O(streams)). Writers lock a stream's row
-- (and its name, see PostgresTransaction) until commit: that orders publishers from every
-- daemon into one contiguous, gap-free sequence.
CREATE TABLE streams (
    id               bigserial PRIMARY KEY,
    name             text    NOT NULL UNIQUE,
    capacity         bigint  CHECK (capacity IS NULL OR capacity >= 0),  -- NULL: unlimited
    max_bytes        bigint  CHECK (max_bytes IS NULL OR max_bytes >= 0),
    max_age_seconds  double precision CHECK (max_age_seconds IS NULL OR max_age_seconds > 0),
    created_at       text    NOT NULL,
    first_seq        bigint  NOT NULL DEFAULT 1,   -- lowest retained; last_seq + 1 when empty
    last_seq         bigint  NOT NULL DEFAULT 0,   -- highest ever assigned; never reused
    event_count      bigint  NOT NULL DEFAULT 0,
    byte_count       bigint  NOT NULL DEFAULT 0,
    terminal         text    CHECK (terminal IN ('completed', 'failed')),
    terminal_message text,
    terminal_at      text,
    last_time        bigint  NOT NULL DEFAULT 0,   -- ms of the newest event: times never go back
    source_command   text,
    source_connect   text,
    source_options   text,
    content_type     text,
    ttl_seconds      bigint,
    expires_at       bigint,
    writer_seq       text,
    fork_of          bigint,                       -- the source stream's id
    fork_seq         bigint,
    fork_offset      bigint,
    fork_sub_offset  bigint,
    deleted_at       text                          -- soft-deleted: forks still read it
);

-- The log. Times are ms since 1970 (UTC); the `events` view shows them as ISO-8601 text.
CREATE TABLE event_log (
    stream_id bigint NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    seq       bigint NOT NULL,
    time      bigint NOT NULL,
    payload   bytea  NOT NULL,
    PRIMARY KEY (stream_id, seq)
);

CREATE TABLE consumers (
    stream_id  bigint NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    name       text   NOT NULL,
    acked_seq  bigint NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (stream_id, name)
);

CREATE TABLE producers (
    stream_id  bigint NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    producer   text   NOT NULL,
    epoch      bigint NOT NULL,
    last_pseq  bigint NOT NULL,
    runs       bytea  NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (stream_id, producer)
);

-- What people query, as with sqlite3:
--   SELECT seq, time, convert_from(payload, 'UTF8') FROM events WHERE stream = 'orders' ORDER BY seq;
CREATE VIEW events AS
    SELECT s.name AS stream, e.seq AS seq,
           to_char(to_timestamp(e.time / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time,
           e.payload AS payload
    FROM event_log AS e JOIN streams AS s ON s.id = e.stream_id;
