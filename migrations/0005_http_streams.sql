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
