-- Copyright (c) 2026, the dlock developers
--
-- Moving a row from one lock to another (the lock name from a column,
-- issue 24 item 8): tokens are compared per lock, so a holder of both locks
-- moves a row whichever lock was acquired first.  Tokens vary: only
-- comparisons are printed.
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
-- 'older' is acquired first, so its token is below every token of 'newer'.
SELECT dlock_acquire('older', '1 min') AS o1 \gset
SELECT dlock_acquire('newer', '1 min') AS n1 \gset
SELECT :o1 < :n1 AS older_first;

CREATE TABLE item (id int PRIMARY KEY, lock text, token bigint);
CREATE TRIGGER item_fence BEFORE INSERT OR UPDATE OR DELETE ON item
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('lock', 'token', 'column');
INSERT INTO item VALUES (1, 'newer', :n1), (2, 'older', :o1), (3, 'newer', :n1);

-- A row of 'newer' moves to 'older' with the current token of 'older',
-- below the row's old token: that token is the other lock's.
BEGIN;
SELECT dlock_assert('newer', :n1);
UPDATE item SET lock = 'older', token = :o1 WHERE id = 1;
COMMIT;
-- And back, with the current token of 'newer'.
BEGIN;
SELECT dlock_assert('older', :o1);
UPDATE item SET lock = 'newer', token = :n1 WHERE id = 2;
COMMIT;
SELECT id, lock, token = :o1 AS of_older, token = :n1 AS of_newer
  FROM item ORDER BY id;

-- A move that leaves the token alone takes the token declared for the new
-- lock: the old one belongs to the old lock.
BEGIN;
SELECT dlock_assert('newer', :n1);
SELECT dlock_assert('older', :o1);
UPDATE item SET lock = 'older' WHERE id = 3;
COMMIT;
SELECT id, lock, token = :o1 AS of_older FROM item WHERE id = 3;
-- Later writes under the new lock compare with its own token only.
BEGIN;
SELECT dlock_assert('older', :o1);
UPDATE item SET id = 4 WHERE id = 3;
COMMIT;

-- Each lock is still checked with its own token.
\set VERBOSITY sqlstate
-- No declaration for the old lock.
UPDATE item SET lock = 'older', token = :o1 WHERE id = 2;
-- A stale token for the new lock.
SELECT dlock_release('older', :o1);
SELECT dlock_acquire('older', '1 min') AS o2 \gset
BEGIN;
SELECT dlock_assert('newer', :n1);
UPDATE item SET lock = 'older', token = :o1 WHERE id = 2;
ROLLBACK;
\set VERBOSITY default
-- The row of 'older' written with its old token moves with the current one.
BEGIN;
SELECT dlock_assert('older', :o2);
UPDATE item SET lock = 'newer', token = :n1 WHERE id = 1;
COMMIT;
SELECT id, lock, token = :n1 AS of_newer FROM item ORDER BY id;

-- A move to another lock and another partition at once.
CREATE TABLE pitem (id int, lock text, token bigint) PARTITION BY RANGE (id);
CREATE TABLE pitem_a PARTITION OF pitem FOR VALUES FROM (0) TO (10);
CREATE TABLE pitem_b PARTITION OF pitem FOR VALUES FROM (10) TO (20);
CREATE TRIGGER pitem_fence BEFORE INSERT OR UPDATE OR DELETE ON pitem
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('lock', 'token', 'column');
-- ('older' was acquired again: its token is now above the one of 'newer'.)
SELECT :n1 < :o2 AS newer_below;
INSERT INTO pitem VALUES (1, 'older', :o2), (2, 'older', :o2);
BEGIN;
SELECT dlock_assert('older', :o2);
UPDATE pitem SET id = 11, lock = 'newer', token = :n1 WHERE id = 1;
SELECT dlock_assert('newer', :n1);
UPDATE pitem SET id = 12, lock = 'newer' WHERE id = 2;
COMMIT;
SELECT tableoid::regclass AS part, id, lock, token = :n1 AS of_newer
  FROM pitem ORDER BY id;

DROP TABLE item, pitem;
