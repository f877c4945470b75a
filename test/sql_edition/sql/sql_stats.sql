-- Copyright (c) 2026, the dlock developers
--
-- The SQL edition's counters (issue 27 item 1) and cleanup by the
-- application (item 8): dlock_stats, dlock_stats_total, dlock_stats_reset,
-- dlock_cleanup granted to a role.  Run by test/sql_edition/run.sh as a
-- superuser; dlock_owner installed the edition.  Totals are compared
-- before and after (the other tests of the run count too); tokens and
-- times are never printed.
\set SHOW_CONTEXT never
SET search_path = dlock, public;
CREATE FUNCTION public.stats_of(lock text)
RETURNS TABLE (acquisitions int8, owner_renewals int8, renewals int8, releases int8,
			   takeovers int8, lost int8, waits int8, not_counted bool, reset bool)
LANGUAGE sql AS $$
SELECT s.acquisitions, s.owner_renewals, s.renewals, s.releases, s.takeovers, s.lost, s.waits,
	   s.busy IS NULL AND s.wait_timeouts IS NULL AND s.fence_refusals IS NULL,
	   s.stats_reset IS NOT NULL
  FROM dlock.dlock_stats s WHERE s.name = lock
$$;
CREATE TABLE public.totals AS SELECT 0 AS at, * FROM dlock.dlock_stats_total;
GRANT ALL ON public.totals TO PUBLIC;
CREATE FUNCTION public.totals_since(since int)
RETURNS TABLE (acquisitions int8, owner_renewals int8, renewals int8, releases int8,
			   takeovers int8, lost int8, waits int8, not_counted bool)
LANGUAGE sql AS $$
SELECT t.acquisitions - b.acquisitions, t.owner_renewals - b.owner_renewals, t.renewals - b.renewals,
	   t.releases - b.releases, t.takeovers - b.takeovers, t.lost - b.lost, t.waits - b.waits,
	   t.busy IS NULL AND t.wait_timeouts IS NULL AND t.fence_refusals IS NULL
  FROM dlock.dlock_stats_total t, public.totals b WHERE b.at = since
$$;

SET ROLE alice;
SELECT dlock_acquire('st1', '1 min') AS t1 \gset
SELECT * FROM stats_of('st1');
-- Busy answers write nothing: the row stays the same version.
RESET ROLE;
SELECT xmin AS x0 FROM dlock.dlock_expiry WHERE name = 'st1' \gset
SET ROLE bob;
SELECT dlock_acquire('st1', '1 min') IS NULL AS busy, dlock_acquire('st1', '1 min', owner => 'o') IS NULL AS busy_owner;
RESET ROLE;
SELECT xmin = :'x0' AS same_row FROM dlock.dlock_expiry WHERE name = 'st1';
SET ROLE alice;
SELECT dlock_renew('st1', :t1, '1 min') AS renewed, dlock_renew('st1', :t1 + 1, '1 min') AS wrong_token;
SELECT dlock_release('st1', :t1) AS released, dlock_release('st1', :t1) AS again;
-- An owner's acquisition, then its renewals by acquire.
SELECT dlock_acquire('st1', '1 min', owner => 'w') AS t2 \gset
SELECT dlock_acquire('st1', '1 min', owner => 'w') = :t2 AS kept, dlock_acquire('st1', '1 min', owner => 'w') = :t2 AS kept;
SELECT * FROM stats_of('st1');
-- Expired without a release: lost, and taken over.
SELECT dlock_acquire('st2', '100 ms') IS NOT NULL AS acquired;
SELECT pg_sleep(0.2);
SELECT dlock_acquire('st2', '1 min') AS t3 \gset
SELECT * FROM stats_of('st2');
-- Waits: counted by the acquire that waited and got the lease, with its
-- time; an acquire that waited in vain is not counted (SQL edition).
SELECT dlock_acquire('sw', '600 ms') IS NOT NULL AS acquired;
SET ROLE bob;
SELECT dlock_acquire('sw', '1 min', wait => '10 s') AS t5 \gset
SELECT dlock_acquire('sw', '1 min', wait => '100 ms') IS NULL AS waited_in_vain;
SELECT s.acquisitions, s.takeovers, s.lost, s.waits, s.wait_time BETWEEN 0.1 AND 10 AS wait_time,
	   s.wait_time_max = s.wait_time AS max_is_it
  FROM dlock_stats s WHERE s.name = 'sw';
-- Every role sees every name's counters.
SET ROLE bob;
SELECT count(*) AS rows_seen FROM dlock_stats WHERE name IN ('st1', 'st2');

-- The reset: not for PUBLIC.
SELECT dlock_stats_reset('st1');
RESET ROLE;
SELECT dlock_stats_reset('');
INSERT INTO totals SELECT 1, * FROM dlock_stats_total;
-- One name: its counters go, the totals stay.
SELECT dlock_stats_reset('st1');
SELECT * FROM stats_of('st1');
SELECT * FROM totals_since(1);
SELECT * FROM stats_of('st2');
-- The longest wait after a reset is the longest since, even if shorter.
SELECT wait_time_max AS max_before FROM dlock_stats WHERE name = 'sw' \gset
SELECT dlock_stats_reset('sw');
SELECT waits, wait_time, wait_time_max FROM dlock_stats WHERE name = 'sw';
SET ROLE bob;
SELECT dlock_release('sw', :t5) AS released;
SELECT dlock_acquire('sw', '100 ms') IS NOT NULL AS acquired;
SET ROLE alice;
SELECT dlock_acquire('sw', '1 min', wait => '10 s') AS t6 \gset
SELECT waits, wait_time_max = wait_time AS max_is_it, wait_time_max < :max_before AS shorter
  FROM dlock_stats WHERE name = 'sw';
SELECT dlock_release('sw', :t6) AS released;
RESET ROLE;
-- Counting goes on after the reset.
SET ROLE alice;
SELECT dlock_renew('st1', :t2, '1 min') AS renewed;
SELECT * FROM stats_of('st1');
SELECT * FROM totals_since(1);

-- Cleanup by the application: not without a grant.
SELECT dlock_release('st1', :t2) AS released, dlock_release('st2', :t3) AS released;
SELECT dlock_acquire('st3', '100 ms') IS NOT NULL AS acquired;
SELECT pg_sleep(0.2);
SELECT dlock_cleanup('0 s');
RESET ROLE;
GRANT EXECUTE ON FUNCTION dlock.dlock_cleanup(interval, int4) TO alice;
SET ROLE alice;
INSERT INTO totals SELECT 2, * FROM dlock_stats_total;
SELECT dlock_cleanup('0 s') >= 3 AS cleaned;
SELECT count(*) AS rows_left FROM dlock_stats WHERE name IN ('st1', 'st2', 'st3');
-- The deleted rows' counters stay in the totals; st3 expired without a
-- release: lost, counted by the cleanup.
SELECT * FROM totals_since(2);
-- A name made anew counts from 0, whatever its old row's baseline.
SELECT dlock_acquire('st1', '1 min') AS t4 \gset
SELECT * FROM stats_of('st1');
RESET ROLE;
REVOKE EXECUTE ON FUNCTION dlock.dlock_cleanup(interval, int4) FROM alice;

-- Everything: per name and totals.
SELECT dlock_stats_reset();
SELECT * FROM stats_of('st1');
SELECT acquisitions, owner_renewals, renewals, releases, takeovers, lost, waits,
	   wait_time, wait_time_max, busy, wait_timeouts, fence_refusals,
	   stats_reset IS NOT NULL AS reset
  FROM dlock_stats_total;
SELECT dlock_release('st1', :t4) AS released;
SELECT * FROM stats_of('st1');
SELECT releases FROM dlock_stats_total;
-- The shapes: one row per lease row; the columns of the C edition.
SELECT count(*) = (SELECT count(*) FROM dlock.dlock_lease) AS one_per_lease FROM dlock_stats;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'dlock.dlock_stats'::regclass AND attnum > 0 ORDER BY attnum;
SELECT has_function_privilege('public', 'dlock.dlock_stats_reset(text)', 'EXECUTE') AS public_reset,
	   has_table_privilege('public', 'dlock.dlock_stats', 'SELECT') AS public_stats,
	   has_table_privilege('public', 'dlock.dlock_stats_total', 'SELECT') AS public_total;
DROP TABLE public.totals;
DROP FUNCTION public.stats_of(text), public.totals_since(int);
