-- replay schema on PostgreSQL, version 5: no table changes. A batch written on what this
-- daemon last saw of its streams' rows (no locks taken, one statement) checks each row is
-- still that version (its xmin) and fails the whole transaction when one is not, with the
-- SQLSTATE RP001, so the daemon runs the batch again under the locks. The check must raise
-- inside the statement: a row left unchanged by a stale UPDATE is not an error by itself,
-- and the batch's other rows must not be kept without it.
CREATE FUNCTION replay_require_current(current boolean) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN IF NOT current THEN RAISE EXCEPTION USING ERRCODE = 'RP001', MESSAGE = 'a stream row changed since this daemon read it'; END IF; RETURN true; END $$;
