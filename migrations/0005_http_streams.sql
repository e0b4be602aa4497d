-- What the Durable Streams HTTP front door keeps per stream (docs/HTTP.md).

-- The stream's content type, set when it is created over HTTP; NULL for a stream created
-- over the socket, which HTTP serves as application/octet-stream.
ALTER TABLE streams ADD COLUMN content_type TEXT;
-- Expiry: a sliding time-to-live in seconds (reset by every read and write), or an
-- absolute time (ms since 1970). At most one of the two is set.
ALTER TABLE streams ADD COLUMN ttl_seconds INTEGER CHECK (ttl_seconds IS NULL OR ttl_seconds >= 0);
ALTER TABLE streams ADD COLUMN expires_at INTEGER;
-- The last `Stream-Seq` a writer sent: the next one must sort after it, byte-wise.
ALTER TABLE streams ADD COLUMN writer_seq TEXT;

-- Forks (Durable Streams §4.2): a fork inherits its source's events up to `fork_seq`
-- without copying them, and numbers its own from `fork_seq + 1`, in the same offset space.
-- `fork_offset` and `fork_sub_offset` are what its creator asked for (a PUT that repeats
-- them is the same fork).
ALTER TABLE streams ADD COLUMN fork_of INTEGER REFERENCES streams(id);
ALTER TABLE streams ADD COLUMN fork_seq INTEGER;
ALTER TABLE streams ADD COLUMN fork_offset INTEGER;
ALTER TABLE streams ADD COLUMN fork_sub_offset INTEGER;
-- A deleted stream that forks still read from stays, out of sight, until its last fork is
-- deleted: its name cannot be used again meanwhile.
ALTER TABLE streams ADD COLUMN deleted_at TEXT;
