-- Copyright (c) 2026, the dlock developers
--
-- The shared-memory counters (busy answers; issue 27 item 1) follow the
-- transaction that resets or forgets them (a10 F8): a dlock_stats_reset()
-- or dlock_stats_reset(name) rolled back, also to a savepoint, leaves them
-- as they were, and so does a rolled-back dlock_cleanup that deleted the
-- name; a committed one zeroes or forgets them.  Without
-- shared_preload_libraries the counters are NULL and the answers the same
-- (:shared picks the value expected).
--
DROP EXTENSION IF EXISTS dlock;
CREATE EXTENSION dlock;
SELECT count(*) > 0 AS shared FROM dlock_stats_shared() WHERE name IS NULL \gset
SELECT dlock_stats_reset();
SELECT dlock_acquire('rb/a', '1 min') AS a \gset
SELECT dlock_acquire('rb/a', '1 min') IS NULL AS busy;
SELECT dlock_acquire('rb/a', '1 min') IS NULL AS busy;
-- The expected busy count of rb/a and of the total: n, or NULL unshared.
CREATE FUNCTION pg_temp.busy_is(n int, shared bool)
RETURNS TABLE (name_ok bool, total_ok bool)
LANGUAGE sql AS $$
  SELECT (SELECT busy FROM dlock_stats WHERE name = 'rb/a')
           IS NOT DISTINCT FROM (CASE WHEN shared THEN n END),
         (SELECT busy FROM dlock_stats_total)
           IS NOT DISTINCT FROM (CASE WHEN shared THEN n END)
$$;
SELECT * FROM pg_temp.busy_is(2, :'shared');

-- Rolled back: nothing changes.
BEGIN;
SELECT dlock_stats_reset();
ROLLBACK;
SELECT * FROM pg_temp.busy_is(2, :'shared');
BEGIN;
SELECT dlock_stats_reset('rb/a');
ROLLBACK;
SELECT * FROM pg_temp.busy_is(2, :'shared');
BEGIN;
SAVEPOINT s;
SELECT dlock_stats_reset();
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM pg_temp.busy_is(2, :'shared');

-- A reset in a subtransaction that commits takes effect with the
-- transaction, not before.
BEGIN;
SAVEPOINT s;
SELECT dlock_stats_reset('rb/a');
RELEASE SAVEPOINT s;
SELECT * FROM pg_temp.busy_is(2, :'shared');
COMMIT;
SELECT (SELECT busy FROM dlock_stats WHERE name = 'rb/a')
         IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 0 END) AS name_zeroed;

-- A cleanup that deletes the name, rolled back, keeps its counters.
SELECT dlock_acquire('rb/a', '1 min') IS NULL AS busy;
SELECT dlock_release('rb/a', :a) AS released;
BEGIN;
SELECT dlock_cleanup('0', 100) AS deleted;
ROLLBACK;
SELECT (SELECT busy FROM dlock_stats WHERE name = 'rb/a')
         IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 1 END) AS name_kept;
-- Committed, it forgets them (the total keeps them).
SELECT dlock_cleanup('0', 100) AS deleted;
SELECT count(*) AS shared_rows FROM dlock_stats_shared() WHERE name = 'rb/a';
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
