-- Copyright (c) 2026, the dlock developers
--
-- A partition move's pending state (issue 24 item 5, reviewer's item 2):
-- the BEFORE UPDATE of a row in a partition lets the DELETE and INSERT
-- halves of that very UPDATE through as its writer.  An UPDATE that leaves
-- the row where it is leaves that state behind; it must serve no later
-- statement, above all not another role's INSERT with the holder's token.
-- Tokens vary: only comparisons are printed.
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
CREATE ROLE regress_dlock_mover;	-- holds the lease
CREATE ROLE regress_dlock_intruder;	-- does not
-- A 1.0-style fence (no BEFORE DELETE): the INSERT half comes next.
CREATE TABLE mp (id int, k int, v int, token bigint) PARTITION BY LIST (k);
CREATE TABLE mp1 PARTITION OF mp FOR VALUES IN (1);
CREATE TABLE mp2 PARTITION OF mp FOR VALUES IN (2);
CREATE TRIGGER f BEFORE INSERT OR UPDATE ON mp
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('M', 'token');
GRANT ALL ON mp, mp1, mp2 TO regress_dlock_mover, regress_dlock_intruder;
SET ROLE regress_dlock_mover;
SELECT dlock_acquire('M', '1 min') AS t1 \gset
INSERT INTO mp VALUES (1, 1, 0, :t1);
SELECT dlock_release('M', :t1);
SELECT dlock_acquire('M', '1 min') AS t2 \gset
RESET ROLE;
\set VERBOSITY sqlstate
-- The holder's in-place UPDATE, then another role's INSERT: 42501.
BEGIN;
SET LOCAL ROLE regress_dlock_mover;
UPDATE mp SET token = :t2 WHERE id = 1;
SET LOCAL ROLE regress_dlock_intruder;
INSERT INTO mp VALUES (2, 1, 0, :t2);
ROLLBACK;
-- The same, the intruder's INSERT in the holder's next statement,
-- through a SECURITY DEFINER function the intruder owns.
CREATE FUNCTION mp_intrude(tok bigint) RETURNS void
  LANGUAGE sql SECURITY DEFINER SET search_path = public
  AS 'INSERT INTO mp VALUES (3, 2, 0, tok)';
ALTER FUNCTION mp_intrude(bigint) OWNER TO regress_dlock_intruder;
BEGIN;
SET LOCAL ROLE regress_dlock_mover;
UPDATE mp SET v = 1, token = :t2 WHERE id = 1;
SELECT mp_intrude(:t2);
ROLLBACK;
\set VERBOSITY default
-- The holder's own moves still pass: to the other partition and back,
-- with the token carried and with the token declared.
SET ROLE regress_dlock_mover;
UPDATE mp SET k = 2, token = :t2 WHERE id = 1;
BEGIN;
SELECT dlock_assert('M', :t2);
UPDATE mp SET k = 1 WHERE id = 1;
COMMIT;
SELECT tableoid::regclass, id, token = :t2 AS current FROM mp;
RESET ROLE;
DROP TABLE mp;
DROP FUNCTION mp_intrude(bigint);
DROP ROLE regress_dlock_mover, regress_dlock_intruder;
