-- Copyright (c) 2026, the dlock developers
--
-- The dlock_fence trigger works out its arguments once per statement and
-- trigger (kept in the trigger's FmgrInfo): several fence triggers on one
-- table, and partitions whose columns sit at different positions, each keep
-- their own lock name and token column over a multi-row statement.
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
SELECT dlock_acquire('job', '1 min') AS t1 \gset
SELECT dlock_acquire('other', '1 min') AS o1 \gset
-- The error of a statement, with its tokens masked.
CREATE FUNCTION try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, '[0-9]{4,}', 'N', 'g');
END $$;

-- Two fence triggers on one table, for two locks and two token columns.
CREATE TABLE two (id int PRIMARY KEY, v int, tok_job bigint, tok_other bigint);
CREATE TRIGGER two_job BEFORE INSERT OR UPDATE OR DELETE ON two
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'tok_job');
CREATE TRIGGER two_other BEFORE INSERT OR UPDATE OR DELETE ON two
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('other', 'tok_other');
INSERT INTO two VALUES (1, 0, :t1, :o1), (2, 0, :t1, :o1);
-- Each trigger asks for its own lock's declaration, on every row.
BEGIN;
SELECT dlock_assert('job', :t1);
UPDATE two SET v = v + 1;
ROLLBACK;
BEGIN;
SELECT dlock_assert('other', :o1);
UPDATE two SET v = v + 1;
ROLLBACK;
BEGIN;
SELECT dlock_assert('job', :t1);
SELECT dlock_assert('other', :o1);
UPDATE two SET v = v + 1;
-- NULL tokens are filled into each trigger's own column.
INSERT INTO two (id, v) VALUES (3, 0), (4, 0);
COMMIT;
SELECT id, v, tok_job = :t1 AS job_filled, tok_other = :o1 AS other_filled
  FROM two ORDER BY id;
-- A lower token in the second trigger's column, on the second row only.
BEGIN;
SELECT dlock_assert('job', :t1);
SELECT dlock_assert('other', :o1);
SELECT try(format('UPDATE two SET v = 9, tok_other = CASE id WHEN 2 THEN %s - 1 ELSE %s END WHERE id IN (1, 2)', :o1, :o1));
ROLLBACK;

-- The role rule is applied on every check, also when the transaction
-- already holds the name's check lock: after SET ROLE to a role that may not
-- act for the holder, dlock_check of the token fails (42501).  A declared
-- token is vouched for by the role that declared it (fence.c), so a write
-- that uses the declaration still passes.
CREATE ROLE regress_dlock_stranger;
GRANT SELECT, INSERT, UPDATE, DELETE ON two TO regress_dlock_stranger;
BEGIN;
SELECT dlock_assert('job', :t1);
SELECT dlock_assert('other', :o1);
SET LOCAL ROLE regress_dlock_stranger;
\set VERBOSITY terse
SELECT dlock_check('job', :t1);
\set VERBOSITY default
ROLLBACK;
BEGIN;
SELECT dlock_assert('job', :t1);
SELECT dlock_assert('other', :o1);
SET LOCAL ROLE regress_dlock_stranger;
UPDATE two SET v = 5 WHERE id = 1;
RESET ROLE;
COMMIT;
SELECT id, v FROM two WHERE id = 1;
REVOKE ALL ON two FROM regress_dlock_stranger;
DROP ROLE regress_dlock_stranger;

-- Partitions whose token column sits at different positions: each
-- partition's trigger reads and fills its own column.
CREATE TABLE parted (id int, v int, token bigint) PARTITION BY RANGE (id);
CREATE TABLE parted_a PARTITION OF parted FOR VALUES FROM (0) TO (10);
CREATE TABLE parted_b (gone int, token bigint, v int, id int);
ALTER TABLE parted_b DROP COLUMN gone;
ALTER TABLE parted ATTACH PARTITION parted_b FOR VALUES FROM (10) TO (20);
CREATE TRIGGER parted_fence BEFORE INSERT OR UPDATE OR DELETE ON parted
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token');
BEGIN;
SELECT dlock_assert('job', :t1);
INSERT INTO parted (id, v) VALUES (1, 0), (11, 0), (2, 0), (12, 0);
UPDATE parted SET v = v + 1;
-- Moves between the partitions, both ways.
UPDATE parted SET id = 13 WHERE id = 1;
UPDATE parted SET id = 3 WHERE id = 12;
COMMIT;
SELECT tableoid::regclass AS part, id, v, token = :t1 AS filled
  FROM parted ORDER BY id;
-- After a takeover, the old token is refused in either partition, the new
-- one passes in both.
SELECT dlock_release('job', :t1);
SELECT dlock_acquire('job', '1 min') AS t2 \gset
SELECT try(format('INSERT INTO parted VALUES (5, 0, %s)', :t1));
SELECT try(format('INSERT INTO parted VALUES (15, 0, %s)', :t1));
UPDATE parted SET v = 7, token = :t2;
SELECT tableoid::regclass AS part, id, v, token = :t2 AS newer
  FROM parted ORDER BY id;

DROP TABLE two, parted;
DROP FUNCTION try(text);
SELECT dlock_release('job', :t2);
SELECT dlock_release('other', :o1);

-- A check reads the lease row where the last lookup of the name found it,
-- and takes it only if it is still that name's current row: a table that
-- shrank, or another name's row at that address, sends it to the index.
SELECT dlock_acquire('pad-' || i, '1 min') IS NOT NULL AS padded
  FROM generate_series(1, 300) AS i \g /dev/null
SELECT dlock_acquire('far', '1 min') AS f1 \gset
SELECT (ctid::text::point)[0] > 0 AS far_past_first_page
  FROM dlock_lease WHERE name = 'far';
SELECT dlock_check('far', :f1) AS far_checked;
-- The table shrinks to one page: the old address is past its end.
TRUNCATE dlock_lease;
SELECT dlock_acquire('near', '1 min') AS n1 \gset
SELECT dlock_check('near', :n1) AS near_checked;
SELECT dlock_acquire('far', '1 min') AS f2 \gset
SELECT dlock_check('far', :f2) AS far_checked_after_truncate;
SELECT dlock_check('far', :f1) AS old_far_token_refused;
-- Another name's row where 'near' was last found.
TRUNCATE dlock_lease;
SELECT dlock_acquire('far', '1 min') AS f3 \gset
SELECT dlock_acquire('near', '1 min') AS n2 \gset
SELECT ctid = '(0,1)' AS far_at_nears_old_address
  FROM dlock_lease WHERE name = 'far';
SELECT dlock_check('near', :f3) AS fars_token_refused_for_near;
SELECT dlock_check('near', :n2) AS near_checked_elsewhere;
SELECT dlock_check('near', :n1) AS old_near_token_refused;
-- The row moves within the transaction that checks it (its own renewal).
BEGIN;
SELECT dlock_check('near', :n2) AS near_checked;
SELECT dlock_renew('near', :n2, '2 min') AS renewed;
SELECT dlock_check('near', :n2) AS near_checked_after_renewal;
SELECT dlock_release('near', :n2) AS released;
SELECT dlock_check('near', :n2) AS near_checked_after_release;
COMMIT;
SELECT dlock_release('far', :f3) AS released;
