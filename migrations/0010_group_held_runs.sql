-- A consumer group's events held on their first delivery, as runs in the group's row
-- (HeldRuns.swift): a work queue hands out and acknowledges every event once, and a
-- group_pending row each was an INSERT and a DELETE per event. group_pending keeps the
-- other pending events (given back, freed, delivered again). NULL: a row written before
-- this migration, whose pending events are all rows; the store moves its held first
-- deliveries into runs when it opens. A build from before this migration refuses the file
-- rather than miss the events held in runs.
ALTER TABLE groups ADD COLUMN held_runs BLOB;
