-- Guarantees kept inside the writer's transaction (docs/ARCHITECTURE.md, "Guarantees").

-- Idempotent producers, one row per (stream, producer id): the epoch, the last producer
-- sequence number committed, and the sequence numbers that the most recent producer
-- sequence numbers got (`runs`: packed little-endian triples of 64-bit integers
-- (first pseq, first seq, count), oldest first), so that a retry is answered with the
-- original sequence number. Written in the same transaction as the events it describes.
CREATE TABLE producers (
    stream_id  INTEGER NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    producer   TEXT    NOT NULL,
    epoch      INTEGER NOT NULL,
    last_pseq  INTEGER NOT NULL,
    runs       BLOB    NOT NULL,
    updated_at INTEGER NOT NULL,  -- ms since 1970: idle producers are forgotten after a while
    PRIMARY KEY (stream_id, producer)
) WITHOUT ROWID;

-- Durable consumers: a named position per stream, acknowledged cumulatively.
CREATE TABLE consumers (
    stream_id  INTEGER NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    name       TEXT    NOT NULL,
    acked_seq  INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (stream_id, name)
) WITHOUT ROWID;
