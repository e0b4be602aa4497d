-- replay schema, version 2: a stream may have an upstream source, a command whose
-- output becomes its events, stored with the stream so it survives restarts.
ALTER TABLE streams ADD COLUMN source_command TEXT;
ALTER TABLE streams ADD COLUMN source_connect TEXT
    CHECK (source_connect IS NULL OR source_connect IN ('eager', 'lazy', 'refcount'));
-- Further source settings (framing, restart policy) as a JSON object.
ALTER TABLE streams ADD COLUMN source_options TEXT;
