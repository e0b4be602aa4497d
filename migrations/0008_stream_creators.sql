-- Who created a stream over the HTTP door with a scoped token (the token's subject), so
-- that a cap on the streams one token may create (--token-max-streams, a token's
-- `limits.streams`) counts the streams it made that still exist, across restarts and
-- daemons. NULL for a stream made otherwise.
ALTER TABLE streams ADD COLUMN created_by TEXT;
CREATE INDEX streams_created_by ON streams (created_by) WHERE created_by IS NOT NULL;
