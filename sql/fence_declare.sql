-- Copyright (c) 2026, the dlock developers
--
-- Fencing in 1.1: declared tokens, every statement shape, parallel workers,
-- PREPARE TRANSACTION, the dlock_fenced_tables view, and a 1.0 database
-- under the 1.1 library.
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
SELECT dlock_acquire('job', '1 min') AS t1 \gset
SELECT dlock_acquire('other', '1 min') AS o1 \gset

CREATE TABLE acct (id int PRIMARY KEY, v int, token bigint);
CREATE TRIGGER acct_fence BEFORE INSERT OR UPDATE OR DELETE ON acct
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token');
CREATE TRIGGER acct_fence_truncate BEFORE TRUNCATE ON acct
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('job');
INSERT INTO acct VALUES (1, 0, :t1);

-- Without a declaration, only a write that carries a new token passes.
UPDATE acct SET v = 1;
UPDATE acct SET v = 1, token = :t1;
DELETE FROM acct;
TRUNCATE acct;
INSERT INTO acct VALUES (2, 0, NULL);
INSERT INTO acct VALUES (1, 5, :t1) ON CONFLICT (id) DO UPDATE SET v = excluded.v;

-- dlock_assert declares; the declaration lasts until the transaction ends.
BEGIN;
SELECT dlock_assert('job', :t1);
UPDATE acct SET v = 1;
INSERT INTO acct VALUES (2, 0, NULL);
SELECT id, v, token = :t1 AS filled FROM acct ORDER BY id;
INSERT INTO acct VALUES (1, 5, :t1) ON CONFLICT (id) DO UPDATE SET v = excluded.v;
DELETE FROM acct WHERE id = 2;
COMMIT;
UPDATE acct SET v = 2;
SELECT id, v FROM acct ORDER BY id;

-- COPY FROM fills a NULL token from the declaration.
BEGIN;
SELECT dlock_assert('job', :t1);
COPY acct (id, v) FROM STDIN;
3	30
4	40
\.
COMMIT;
SELECT id, v, token = :t1 AS filled FROM acct ORDER BY id;
COPY acct (id, v) FROM STDIN;
5	50
\.

-- ROLLBACK TO SAVEPOINT forgets declarations made after the savepoint;
-- RELEASE SAVEPOINT keeps them, so does a committed inner subtransaction.
BEGIN;
SAVEPOINT a;
SELECT dlock_assert('job', :t1);
ROLLBACK TO a;
UPDATE acct SET v = 3 WHERE id = 1;
ROLLBACK;
BEGIN;
SAVEPOINT a;
SAVEPOINT b;
SELECT dlock_assert('job', :t1);
RELEASE b;
RELEASE a;
UPDATE acct SET v = 3 WHERE id = 1;
COMMIT;
BEGIN;
SELECT dlock_assert('job', :t1);
SAVEPOINT a;
SELECT dlock_assert('job', :t1);
ROLLBACK TO a;
UPDATE acct SET v = 4 WHERE id = 1;  -- the earlier declaration remains
COMMIT;
-- An exception block is a subtransaction too.
BEGIN;
DO $$
BEGIN
  PERFORM dlock_assert('job', (SELECT token FROM dlock_leases WHERE name = 'job'));
  RAISE division_by_zero;
EXCEPTION WHEN division_by_zero THEN NULL;
END $$;
UPDATE acct SET v = 5 WHERE id = 1;
ROLLBACK;
SELECT id, v FROM acct ORDER BY id;

-- Declarations are per lock name; several names in one transaction.
CREATE TABLE run (job text, v int, token bigint);
CREATE TRIGGER run_fence BEFORE INSERT OR UPDATE OR DELETE ON run
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token', 'column');
INSERT INTO run VALUES ('job', 0, :t1), ('other', 0, :o1);
BEGIN;
SELECT dlock_assert('job', :t1);
UPDATE run SET v = 1;
ROLLBACK;
BEGIN;
SELECT dlock_assert('job', :t1);
SELECT dlock_assert('other', :o1);
UPDATE run SET v = 1;
COMMIT;
-- Changing the lock name column is checked against both locks.
UPDATE run SET job = 'other', token = :o1 WHERE job = 'job';
BEGIN;
SELECT dlock_assert('job', :t1);
UPDATE run SET job = 'other', token = :o1 WHERE job = 'job';
COMMIT;
SELECT job, v, token = :o1 AS by_other FROM run ORDER BY job, v;

-- A row's token never goes down.
SELECT dlock_release('job', :t1);
SELECT dlock_acquire('job', '1 min') AS t2 \gset
INSERT INTO acct VALUES (6, 0, :t2);
\set VERBOSITY sqlstate
BEGIN;
SELECT dlock_assert('job', :t1);
ROLLBACK;
UPDATE acct SET token = :t1 WHERE id = 6;
\set VERBOSITY default
SELECT count(*) AS rows_of_t2 FROM acct WHERE token = :t2;

-- An UPDATE that moves a row to another partition.
CREATE TABLE ev (day int, v int, token bigint) PARTITION BY RANGE (day);
CREATE TABLE ev_a PARTITION OF ev FOR VALUES FROM (0) TO (10);
CREATE TABLE ev_b (token bigint, v int, day int);
ALTER TABLE ev ATTACH PARTITION ev_b FOR VALUES FROM (10) TO (20);
CREATE TRIGGER ev_fence BEFORE INSERT OR UPDATE OR DELETE ON ev
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token');
INSERT INTO ev VALUES (1, 0, :t2);
UPDATE ev SET day = 11;
UPDATE ev SET day = 11, token = :t2;
BEGIN;
SELECT dlock_assert('job', :t2);
UPDATE ev SET day = 11;
COMMIT;
SELECT tableoid::regclass, day FROM ev;
-- A row written by an earlier holder, moved by the current one: the
-- INSERT half carries the old token and still passes.
SELECT dlock_release('job', :t2);
SELECT dlock_acquire('job', '1 min') AS t3 \gset
BEGIN;
SELECT dlock_assert('job', :t3);
UPDATE ev SET day = 2;
COMMIT;
SELECT tableoid::regclass, day, token = :t2 AS old_token_kept FROM ev;
-- A move that writes the writer's new token needs no declaration.
UPDATE ev SET day = 13, token = :t3;
SELECT tableoid::regclass, day, token = :t3 AS new_token FROM ev;
-- ... and a plain INSERT of that old token does not.
\set VERBOSITY sqlstate
BEGIN;
SELECT dlock_assert('job', :t3);
INSERT INTO ev VALUES (12, 0, :t2);
ROLLBACK;
\set VERBOSITY default
-- The same move under a trigger created the 1.0 way (no BEFORE DELETE).
CREATE TABLE ev10 (day int, v int, token bigint) PARTITION BY RANGE (day);
CREATE TABLE ev10_a PARTITION OF ev10 FOR VALUES FROM (0) TO (10);
CREATE TABLE ev10_b PARTITION OF ev10 FOR VALUES FROM (10) TO (20);
CREATE TRIGGER ev10_fence BEFORE INSERT OR UPDATE ON ev10
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token');
INSERT INTO ev10 VALUES (1, 0, :t3);
SELECT dlock_release('job', :t3);
SELECT dlock_acquire('job', '1 min') AS t4 \gset
UPDATE ev10 SET day = 11;
BEGIN;
SELECT dlock_assert('job', :t4);
UPDATE ev10 SET day = 11;
COMMIT;
SELECT tableoid::regclass, day, token = :t3 AS old_token_kept FROM ev10;

-- What the triggers fence.
CREATE TABLE old_style (id int, token bigint);
CREATE TRIGGER old_style_fence BEFORE INSERT OR UPDATE ON old_style
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token');
CREATE TABLE disabled (id int, token bigint);
CREATE TRIGGER disabled_fence BEFORE INSERT OR UPDATE OR DELETE ON disabled
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token');
ALTER TABLE disabled DISABLE TRIGGER disabled_fence;
SELECT * FROM dlock_fenced_tables ORDER BY "table"::text;

-- Misconfigured TRUNCATE triggers.
CREATE TABLE bad (job text, token bigint);
CREATE TRIGGER bad_truncate BEFORE TRUNCATE ON bad
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('job', 'token', 'column');
TRUNCATE bad;
DROP TRIGGER bad_truncate ON bad;
CREATE TRIGGER bad_truncate AFTER TRUNCATE ON bad
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('job');
TRUNCATE bad;
DROP TRIGGER bad_truncate ON bad;
CREATE TRIGGER bad_delete BEFORE DELETE ON bad
  FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('job', 'token');
DELETE FROM bad;
DROP TABLE bad;

-- PREPARE TRANSACTION: refused after any dlock call, the transaction
-- rolled back; allowed for a transaction that only reads dlock_leases.
CREATE TABLE scratch (x int);
BEGIN;
INSERT INTO scratch VALUES (1);
SELECT dlock_check('job', :t4);
PREPARE TRANSACTION 'dlock_regress';
SELECT count(*) AS prepared FROM pg_prepared_xacts WHERE gid = 'dlock_regress';
SELECT count(*) AS rolled_back FROM scratch;
BEGIN;
SELECT dlock_acquire('prep', '1 min') IS NOT NULL AS acquired;
PREPARE TRANSACTION 'dlock_regress';
SELECT held FROM dlock_leases WHERE name = 'prep';
BEGIN;
INSERT INTO scratch VALUES (2);
SELECT count(*) >= 0 FROM dlock_leases;
PREPARE TRANSACTION 'dlock_regress';
COMMIT PREPARED 'dlock_regress';
SELECT count(*) AS committed FROM scratch;

-- Parallel workers: a PARALLEL SAFE wrapper cannot move a check there.
SELECT proname, proparallel FROM pg_proc
 WHERE proname IN ('dlock_acquire', 'dlock_release', 'dlock_renew', 'dlock_check',
                   'dlock_assert', 'dlock_fence', 'dlock_cleanup')
   AND pronamespace = 'public'::regnamespace
 ORDER BY proname;
CREATE FUNCTION check_wrapper(t bigint) RETURNS boolean LANGUAGE sql PARALLEL SAFE
  AS $$ SELECT dlock_check('job', t) $$;
CREATE TABLE big AS SELECT g FROM generate_series(1, 10000) g;
ANALYZE big;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT count(*) FROM big WHERE check_wrapper(:t4);
\echo :LAST_ERROR_SQLSTATE
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

DROP TABLE acct, run, ev, ev10, old_style, disabled, scratch, big;
DROP FUNCTION check_wrapper(bigint);

-- A database still on 1.0 keeps working under the 1.1 library, the
-- declaration included; the update names tables whose DELETE is not fenced.
DROP EXTENSION dlock;
CREATE EXTENSION dlock VERSION '1.0';
SELECT dlock_acquire('job', '1 min') AS v1 \gset
CREATE TABLE legacy (id int, v int, token bigint);
CREATE TRIGGER legacy_fence BEFORE INSERT OR UPDATE ON legacy
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token');
INSERT INTO legacy VALUES (1, 0, :v1);
SELECT dlock_check('job', :v1) AS checked;
SELECT dlock_renew('job', :v1, '1 min') AS renewed;
-- Until ALTER EXTENSION UPDATE, 1.0 objects keep 1.0's rule: an UPDATE that
-- leaves the token alone is checked against the row's token.
UPDATE legacy SET v = 1;
BEGIN;
SELECT dlock_assert('job', :v1);
UPDATE legacy SET v = 1;
COMMIT;
ALTER EXTENSION dlock UPDATE;
-- From the update on, such an UPDATE needs a declared token.
UPDATE legacy SET v = 2;
SELECT * FROM dlock_fenced_tables;
SELECT dlock_release('job', :v1) AS released;
DROP TABLE legacy;
