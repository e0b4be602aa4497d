-- How each producer row's `runs` are laid out: 0, little-endian triples of 64-bit
-- integers (the rows written before this migration); 1, LEB128 varints relative to the
-- run before (ProducerRunsFormat.swift). The row is written with every batch its producer
-- publishes in, and at 24 bytes a run, sixteen producers interleaving in one stream kept
-- rows of 1.5 KB that each commit wrote again; as deltas such a row is a few hundred bytes.
-- A build from before this migration refuses the file rather than misread new rows.
ALTER TABLE producers ADD COLUMN runs_format INTEGER NOT NULL DEFAULT 0;
