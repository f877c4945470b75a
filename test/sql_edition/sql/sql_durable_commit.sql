-- Copyright (c) 2026, the dlock developers
--
-- SQL edition: an acquire's (and a renewal's) commit is synchronous whatever
-- synchronous_commit the caller sets after the call or around it (a
-- function's SET clause, which restores the setting when it returns).  The
-- probe is a deferred trigger queued after the acquire: it fires at COMMIT
-- after dlock's, and shows the synchronous_commit that the commit record is
-- written with (xact.c: deferred triggers, then RecordTransactionCommit).
\set SHOW_CONTEXT never
SET search_path = dlock, public;
CREATE TABLE commit_probe (x int);
GRANT INSERT ON commit_probe TO PUBLIC;
CREATE FUNCTION commit_probe_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'synchronous_commit at commit: %', current_setting('synchronous_commit');
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER commit_probe AFTER INSERT ON commit_probe
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION commit_probe_note();
CREATE FUNCTION acquire_async(name text) RETURNS int8 LANGUAGE sql
  SET synchronous_commit = off
  AS $$ SELECT dlock.dlock_acquire(name, '1 min') $$;
CREATE FUNCTION renew_async(name text, token int8) RETURNS bool LANGUAGE sql
  SET synchronous_commit = off
  AS $$ SELECT dlock.dlock_renew(name, token, '1 min') $$;
SET ROLE alice;
SET synchronous_commit = off;
-- Nothing of dlock's: the session's setting.
BEGIN;
INSERT INTO commit_probe VALUES (0);
COMMIT;
-- An acquire in a function with SET synchronous_commit = off: the setting
-- is off again when it returns, on at the commit.
BEGIN;
SELECT acquire_async('durable-a') AS token \gset
SHOW synchronous_commit;
INSERT INTO commit_probe VALUES (1);
COMMIT;
-- A renewal the same way.
BEGIN;
SELECT renew_async('durable-a', :token) AS renewed;
SHOW synchronous_commit;
INSERT INTO commit_probe VALUES (2);
COMMIT;
-- A later SET LOCAL in the transaction.
BEGIN;
SELECT dlock_acquire('durable-b', '1 min') IS NOT NULL AS acquired;
SET LOCAL synchronous_commit = off;
INSERT INTO commit_probe VALUES (3);
COMMIT;
-- A release makes nothing durable (as in the C edition).
BEGIN;
SELECT dlock_release('durable-a', :token) AS released;
INSERT INTO commit_probe VALUES (4);
COMMIT;
-- An acquire rolled back with its savepoint leaves nothing to make durable.
BEGIN;
SAVEPOINT s;
SELECT dlock_acquire('durable-c', '1 min') IS NOT NULL AS acquired;
ROLLBACK TO SAVEPOINT s;
INSERT INTO commit_probe VALUES (5);
COMMIT;
-- What defeats it: SET CONSTRAINTS ALL IMMEDIATE before the acquire fires
-- dlock's trigger at the end of the acquire's statement, and a SET after it
-- then has the last word (docs/editions.md).
BEGIN;
SET CONSTRAINTS ALL IMMEDIATE;
SELECT dlock_acquire('durable-d', '1 min') IS NOT NULL AS acquired;
SET LOCAL synchronous_commit = off;
SET CONSTRAINTS ALL DEFERRED;
INSERT INTO commit_probe VALUES (6);
COMMIT;
-- After the acquire it fires dlock's trigger at once, with the same end.
BEGIN;
SELECT dlock_acquire('durable-e', '1 min') IS NOT NULL AS acquired;
SET CONSTRAINTS ALL IMMEDIATE;
SET LOCAL synchronous_commit = off;
SET CONSTRAINTS ALL DEFERRED;
INSERT INTO commit_probe VALUES (7);
COMMIT;
-- a11 finding 8: a revoke's commit is durable too (the tables' owner
-- revokes; synchronous_commit off around the call).
SELECT dlock_acquire('durable-r', '1 min') IS NOT NULL AS acquired;
RESET ROLE;
SET ROLE dlock_owner;
BEGIN;
SET LOCAL synchronous_commit = off;
SELECT revoked_token IS NOT NULL AS revoked FROM dlock_revoke('durable-r');
INSERT INTO commit_probe VALUES (8);
COMMIT;
-- A revoke that revokes nothing changes nothing: the session's setting.
BEGIN;
SET LOCAL synchronous_commit = off;
SELECT revoked_token IS NULL AS nothing FROM dlock_revoke('durable-r');
INSERT INTO commit_probe VALUES (9);
COMMIT;
RESET synchronous_commit;
RESET ROLE;
DROP FUNCTION acquire_async(text);
DROP FUNCTION renew_async(text, int8);
DROP TABLE commit_probe;
DROP FUNCTION commit_probe_note();
DELETE FROM dlock_expiry WHERE name LIKE 'durable-%';
DELETE FROM dlock_lease WHERE name LIKE 'durable-%';
DELETE FROM dlock_sql_queue WHERE name LIKE 'durable-%';
