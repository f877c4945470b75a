-- Copyright (c) 2026, the dlock developers
--
-- Fencing: dlock_check, dlock_assert and the dlock_fence() trigger.
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
-- Tokens count from 1, as in 1.0: pin the token epoch to this history at
-- floor 0, so that no first draw jumps to the clock (docs/tokens.md).
INSERT INTO dlock_epoch
SELECT 0, c.system_identifier,
       ('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::int,
       d.oid, pg_relation_filenode('dlock_token_seq'), clock_timestamp(), 'test'
  FROM pg_control_system() AS c, pg_database AS d
 WHERE d.datname = current_database();
SELECT dlock_acquire('payout', '1 min') AS t1 \gset

-- Guarded UPDATE: the row changes only while the token holds the lease.
CREATE TABLE account (id int PRIMARY KEY, balance int);
INSERT INTO account VALUES (1, 100);
UPDATE account SET balance = balance - 10 WHERE id = 1 AND dlock_check('payout', :t1);
SELECT dlock_release('payout', :t1);
SELECT dlock_acquire('payout', '1 min') AS t2 \gset
UPDATE account SET balance = balance - 10 WHERE id = 1 AND dlock_check('payout', :t1);
SELECT balance FROM account;

-- dlock_assert: nothing for the holder, LK001 for a stale token.
SELECT dlock_assert('payout', :t2);
SELECT dlock_assert('payout', :t1);
\echo :LAST_ERROR_SQLSTATE

-- The trigger, with a constant lock name.
CREATE TABLE ledger (id serial PRIMARY KEY, amount int, token bigint);
CREATE TRIGGER ledger_fence BEFORE INSERT OR UPDATE ON ledger
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('payout', 'token');
INSERT INTO ledger (amount, token) VALUES (10, :t2);
INSERT INTO ledger (amount, token) VALUES (20, :t1);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO ledger (amount, token) VALUES (30, NULL);
\echo :LAST_ERROR_SQLSTATE
-- 1.1: an UPDATE that leaves the token alone needs a declared token.
UPDATE ledger SET amount = 11 WHERE token = :t2;
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SELECT dlock_assert('payout', :t2);
UPDATE ledger SET amount = 11 WHERE token = :t2;
COMMIT;
UPDATE ledger SET amount = 12, token = :t1 WHERE token = :t2;
\echo :LAST_ERROR_SQLSTATE
SELECT amount, token = :t2 AS by_holder FROM ledger ORDER BY id;

-- After the lease moves on, the old holder's writes are refused.
SELECT dlock_release('payout', :t2);
INSERT INTO ledger (amount, token) VALUES (40, :t2);
\echo :LAST_ERROR_SQLSTATE

-- Lock name from a column of the row.
CREATE TABLE job_run (job text, token bigint, note text);
CREATE TRIGGER job_run_fence BEFORE INSERT OR UPDATE ON job_run
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token', 'column');
SELECT dlock_acquire('nightly', '1 min') AS n1 \gset
SELECT dlock_acquire('hourly', '1 min') AS h1 \gset
INSERT INTO job_run VALUES ('nightly', :n1, 'ok');
INSERT INTO job_run VALUES ('hourly', :h1, 'ok');
INSERT INTO job_run VALUES ('hourly', :n1, 'token of another lock');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO job_run VALUES (NULL, :n1, 'no lock name');
\echo :LAST_ERROR_SQLSTATE
SELECT job, note FROM job_run ORDER BY job;

-- Partitioned tables: the trigger is cloned to every partition.
CREATE TABLE events (day date, token bigint, what text) PARTITION BY RANGE (day);
CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
CREATE TRIGGER events_fence BEFORE INSERT OR UPDATE ON events
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('nightly', 'token');
CREATE TABLE events_2027 (what text, token bigint, day date);
ALTER TABLE events ATTACH PARTITION events_2027 FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');
INSERT INTO events VALUES ('2026-06-01', :n1, 'fresh'), ('2027-06-01', :n1, 'fresh, other column order');
INSERT INTO events VALUES ('2027-06-01', :h1, 'stale');
\echo :LAST_ERROR_SQLSTATE
SELECT tableoid::regclass, what FROM events ORDER BY day;

-- Misconfigured triggers say what is wrong.
CREATE TABLE bad (id int, token bigint, small_token int, lockname int);
CREATE TRIGGER bad1 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION dlock_fence('nightly', 'no_such_column');
INSERT INTO bad VALUES (1, :n1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER bad1 ON bad;
CREATE TRIGGER bad2 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION dlock_fence('nightly', 'small_token');
INSERT INTO bad VALUES (1, :n1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER bad2 ON bad;
CREATE TRIGGER bad3 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION dlock_fence('nightly');
INSERT INTO bad VALUES (1, :n1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER bad3 ON bad;
CREATE TRIGGER bad4 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION dlock_fence('nightly', 'token', 'colum');
INSERT INTO bad VALUES (1, :n1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER bad4 ON bad;
CREATE TRIGGER bad5 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION dlock_fence('lockname', 'token', 'column');
INSERT INTO bad VALUES (1, :n1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER bad5 ON bad;
CREATE TRIGGER bad6 AFTER INSERT ON bad FOR EACH ROW EXECUTE FUNCTION dlock_fence('nightly', 'token');
INSERT INTO bad VALUES (1, :n1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER bad6 ON bad;
CREATE TRIGGER bad7 BEFORE INSERT ON bad FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('nightly', 'token');
INSERT INTO bad VALUES (1, :n1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER bad7 ON bad;
CREATE TRIGGER bad8 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION dlock_fence('', 'token');
INSERT INTO bad VALUES (1, :n1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER bad8 ON bad;
SELECT dlock_fence();
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS nothing_written FROM bad;

DROP TABLE account, ledger, job_run, events, bad;
