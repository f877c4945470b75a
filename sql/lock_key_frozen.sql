-- Copyright (c) 2026, the dlock developers
--
-- The lock key never changes (review 2, finding 6): backends keep the
-- secret they read, so an UPDATE of it split the key space.  UPDATE,
-- DELETE, TRUNCATE and a second row fail with 55000, nothing changed; in
-- replica mode (logical replication's apply) rows are skipped.
\set SHOW_CONTEXT never
SELECT secret AS before FROM dlock_lock_key \gset
UPDATE dlock_lock_key SET secret = '\x00000000000000000000000000000000';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM dlock_lock_key;
\echo :LAST_ERROR_SQLSTATE
TRUNCATE dlock_lock_key;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO dlock_lock_key VALUES (1, '\x00000000000000000000000000000000');
\echo :LAST_ERROR_SQLSTATE
-- As logical replication applies them: skipped, and TRUNCATE refused.
SET session_replication_role = replica;
INSERT INTO dlock_lock_key VALUES (1, '\x00000000000000000000000000000000');
UPDATE dlock_lock_key SET secret = '\x00000000000000000000000000000000';
DELETE FROM dlock_lock_key;
TRUNCATE dlock_lock_key;
\echo :LAST_ERROR_SQLSTATE
RESET session_replication_role;
SELECT count(*) AS key_rows, bool_and(secret = :'before') AS unchanged FROM dlock_lock_key;
SELECT dlock_acquire('frozen/1', '1 hour') > 0 AS acquires;
