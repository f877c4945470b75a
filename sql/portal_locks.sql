-- Copyright (c) 2026, the dlock developers
--
-- dlock's locks taken while a portal runs (a cursor's FETCH, PL/pgSQL
-- OPEN/FETCH) belong to the (sub)transaction, never to the portal (issue
-- 24, items 1 and 3): a later fetch of the cursor that fails inside a
-- savepoint, a PL/pgSQL exception block or under psql's ON_ERROR_ROLLBACK
-- releases none of the locks an earlier, successful fetch took (a check
-- lock, an acquire's state and hand-over locks, a release's state lock),
-- and what the backend remembers about its check locks agrees with
-- pg_locks.  test/specs/portal_locks.spec shows the other sessions' side.
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
SELECT dlock_acquire('job', '1 min') AS t1 \gset
CREATE TABLE book (id int PRIMARY KEY, v int, token bigint);
CREATE TRIGGER book_fence BEFORE INSERT OR UPDATE OR DELETE ON book
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token');
-- This backend's locks on lock names, by mode (check, state, hand-over),
-- and the lease table's lock of a write, kept until the transaction ends.
CREATE VIEW my_name_locks AS
SELECT count(*) FILTER (WHERE locktype = 'advisory' AND mode = 'RowShareLock') > 0 AS check_held,
       count(*) FILTER (WHERE locktype = 'advisory' AND mode = 'ShareUpdateExclusiveLock') > 0 AS state_held,
       count(*) FILTER (WHERE locktype = 'advisory' AND mode = 'ExclusiveLock') > 0 AS handover_held,
       count(*) FILTER (WHERE locktype = 'relation' AND mode = 'RowExclusiveLock') > 0 AS table_held
  FROM pg_locks
 WHERE ((locktype = 'advisory' AND objsubid = 17484) OR
        (locktype = 'relation' AND relation = 'dlock_lease'::regclass))
   AND pid = pg_backend_pid() AND granted;

-- The first check runs in a fetch; a later fetch fails in a savepoint.
BEGIN;
DECLARE c CURSOR FOR
SELECT dlock_check('job', :t1) AS ok, 1 / (2 - x) AS q FROM generate_series(1, 3) AS x;
FETCH 1 FROM c;
SAVEPOINT s;
FETCH 1 FROM c;
ROLLBACK TO s;
SELECT * FROM my_name_locks;
SELECT dlock_check('job', :t1) AS ok;
SELECT * FROM my_name_locks;
COMMIT;
SELECT * FROM my_name_locks;

-- A check made by a fetch inside the savepoint goes with the savepoint, and
-- the next check takes the lock again.
BEGIN;
DECLARE c CURSOR FOR
SELECT dlock_check('job', :t1) AS ok FROM generate_series(1, 3) AS x;
SAVEPOINT s;
FETCH 1 FROM c;
SELECT * FROM my_name_locks;
ROLLBACK TO s;
SELECT * FROM my_name_locks;
SELECT dlock_check('job', :t1) AS ok;
SELECT * FROM my_name_locks;
COMMIT;

-- dlock_assert in a fetch: its declaration and its lock stay together, and
-- a write that relies on the declaration passes under the lock.
INSERT INTO book VALUES (1, 0, :t1);
BEGIN;
DECLARE c CURSOR FOR
SELECT dlock_assert('job', :t1) AS asserted, 1 / (2 - x) AS q FROM generate_series(1, 3) AS x;
FETCH 1 FROM c;
SAVEPOINT s;
FETCH 1 FROM c;
ROLLBACK TO s;
UPDATE book SET v = 1 WHERE id = 1;
SELECT * FROM my_name_locks;
COMMIT;

-- The fence's own check, made by a write in a fetch.
CREATE FUNCTION book_write(i int, tok bigint) RETURNS int LANGUAGE sql
  AS $$ INSERT INTO book VALUES (i, 0, tok) RETURNING id $$;
BEGIN;
DECLARE c CURSOR FOR
SELECT book_write(x + 1, :t1) AS id, 1 / (2 - x) AS q FROM generate_series(1, 2) AS x;
FETCH 1 FROM c;
SAVEPOINT s;
FETCH 1 FROM c;
ROLLBACK TO s;
SELECT * FROM my_name_locks;
COMMIT;
SELECT id, v, token = :t1 AS current FROM book ORDER BY id;

-- A PL/pgSQL OPEN/FETCH loop with an exception block per item.
CREATE FUNCTION walk(tok bigint) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  c refcursor;
  ok boolean;
  q int;
  n int := 0;
BEGIN
  OPEN c FOR SELECT dlock_check('job', tok), 1 / (2 - x) FROM generate_series(1, 3) AS x;
  LOOP
    BEGIN
      FETCH c INTO ok, q;
      EXIT WHEN NOT FOUND;
      n := n + 1;
    EXCEPTION WHEN division_by_zero THEN
      EXIT;
    END;
  END LOOP;
  RETURN n;
END
$$;
BEGIN;
SELECT walk(:t1) AS fetched;
SELECT * FROM my_name_locks;
COMMIT;

-- psql's ON_ERROR_ROLLBACK runs each statement in a savepoint of its own.
\set ON_ERROR_ROLLBACK on
BEGIN;
DECLARE c CURSOR FOR
SELECT dlock_check('job', :t1) AS ok, 1 / (2 - x) AS q FROM generate_series(1, 3) AS x;
FETCH 1 FROM c;
FETCH 1 FROM c;
SELECT * FROM my_name_locks;
COMMIT;

-- An acquire in a fetch keeps its state and hand-over locks.
BEGIN;
DECLARE c CURSOR FOR
SELECT dlock_acquire('free', '1 min') IS NOT NULL AS got, 1 / (2 - x) AS q
  FROM generate_series(1, 2) AS x;
FETCH 1 FROM c;
FETCH 1 FROM c;
SELECT * FROM my_name_locks;
COMMIT;
SELECT * FROM my_name_locks;
\set ON_ERROR_ROLLBACK off

-- A release in a fetch keeps its state lock.
BEGIN;
DECLARE c CURSOR FOR
SELECT dlock_release('job', :t1) AS released, 1 / (2 - x) AS q FROM generate_series(1, 2) AS x;
FETCH 1 FROM c;
SAVEPOINT s;
FETCH 1 FROM c;
ROLLBACK TO s;
SELECT * FROM my_name_locks;
COMMIT;
SELECT token = :t1 AS same, released_at IS NOT NULL AS released
  FROM dlock_leases WHERE name = 'job';

DROP FUNCTION walk(bigint);
DROP FUNCTION book_write(int, bigint);
DROP VIEW my_name_locks;
DROP TABLE book;
