-- replay schema on PostgreSQL, version 4: the same as the SQLite store's
-- migrations/0008_stream_creators.sql. Who created a stream with a scoped token, counted
-- against the cap on the streams one token may create; NULL for a stream made otherwise.
ALTER TABLE streams ADD COLUMN created_by text;
CREATE INDEX streams_created_by ON streams (created_by) WHERE created_by IS NOT NULL;
