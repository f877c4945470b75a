-- Copyright (c) 2026, the dlock developers
--
-- Metrics (issue 27 item 1): dlock_stats, dlock_stats_total,
-- dlock_stats_reset.  The counters of calls that write the lease row are in
-- that row; busy answers, timed-out waits and LK001 refusals only in shared
-- memory, so they are NULL unless the library is in
-- shared_preload_libraries (test/run preloads it; the same output either
-- way, as :shared picks the value expected).
--
DROP EXTENSION IF EXISTS dlock;
CREATE EXTENSION dlock;
SELECT count(*) > 0 AS shared FROM dlock_stats_shared() WHERE name IS NULL \gset
SELECT dlock_stats_reset();

-- Every column, in the order of the API.
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'dlock_stats'::regclass AND attnum > 0 ORDER BY attnum;
SELECT array_agg(attname ORDER BY attnum) AS total_columns FROM pg_attribute
 WHERE attrelid = 'dlock_stats_total'::regclass AND attnum > 0;

-- An acquisition, a busy answer, a renewal and a release.
SELECT dlock_acquire('st/a', '1 min') AS a \gset
SELECT xmin AS a_xmin FROM dlock_lease WHERE name = 'st/a' \gset
SELECT dlock_acquire('st/a', '1 min') IS NULL AS busy;
-- The busy answer wrote nothing.
SELECT xmin = :'a_xmin' AS busy_wrote_nothing FROM dlock_lease WHERE name = 'st/a';
SELECT dlock_renew('st/a', :a, '1 min') AS renewed;
SELECT dlock_renew('st/a', :a + 1, '1 min') AS stale_renewal;
SELECT dlock_release('st/a', :a) AS released;
SELECT dlock_release('st/a', :a) AS released_twice;
SELECT acquisitions, owner_renewals, renewals, releases, takeovers, lost,
	   busy IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 1 END) AS busy_ok,
	   waits, wait_timeouts IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 0 END) AS timeouts_ok,
	   fence_refusals IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 0 END) AS refusals_ok,
	   stats_reset IS NULL AS never_reset
  FROM dlock_stats WHERE name = 'st/a';

-- Owner renewals keep the token and are counted apart.
SELECT dlock_acquire('st/o', '1 min', owner => 'pod-1') AS o \gset
SELECT dlock_acquire('st/o', '1 min', owner => 'pod-1') = :o AS same_token;
SELECT dlock_acquire('st/o', '1 min', owner => 'pod-1') = :o AS same_token;
SELECT acquisitions, owner_renewals FROM dlock_stats WHERE name = 'st/o';

-- An expiry nobody released: a takeover, and a lost lease.  The taker
-- waited in the queue for the expiry: a wait, with its time.
SELECT dlock_acquire('st/e', '200 ms') IS NOT NULL AS took;
SELECT dlock_acquire('st/e', '1 min', wait => '10 s') AS e \gset
SELECT acquisitions, takeovers, lost, waits, wait_time > 0.05 AND wait_time < 10 AS wait_time_ok,
	   wait_time_max = wait_time AS one_wait
  FROM dlock_stats WHERE name = 'st/e';

-- A wait that times out writes nothing: only in shared memory.
SELECT dlock_acquire('st/e', '1 min', wait => '50 ms') IS NULL AS timed_out;
SELECT waits = (CASE WHEN :'shared'::bool THEN 2 ELSE 1 END) AS waits_ok,
	   wait_timeouts IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 1 END) AS timeouts_ok,
	   busy IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 1 END) AS busy_ok
  FROM dlock_stats WHERE name = 'st/e';

-- LK001 refusals of dlock_assert and of the fence, in aborted transactions.
CREATE TABLE st_fenced (id int PRIMARY KEY, token bigint);
CREATE TRIGGER st_fence BEFORE INSERT OR UPDATE OR DELETE ON st_fenced
	FOR EACH ROW EXECUTE FUNCTION dlock_fence('st/e', 'token');
\set VERBOSITY sqlstate
SELECT dlock_assert('st/e', :e - 1);
INSERT INTO st_fenced VALUES (1, :e - 1);
INSERT INTO st_fenced VALUES (1, NULL);
\set VERBOSITY default
INSERT INTO st_fenced VALUES (1, :e);
SELECT dlock_check('st/e', :e - 1) AS check_false;	-- a false is no refusal
SELECT fence_refusals IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 3 END) AS refusals_ok
  FROM dlock_stats WHERE name = 'st/e';
DROP TABLE st_fenced;

SELECT acquisitions, owner_renewals, renewals, releases, takeovers, lost,
	   busy IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 2 END) AS busy_ok,
	   waits = (CASE WHEN :'shared'::bool THEN 2 ELSE 1 END) AS waits_ok,
	   wait_timeouts IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 1 END) AS timeouts_ok,
	   fence_refusals IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 3 END) AS refusals_ok,
	   stats_reset IS NOT NULL AS reset_known,
	   abs(wait_time - (SELECT sum(s.wait_time) FROM dlock_stats AS s)) < 1e-6 AS wait_time_summed
  FROM dlock_stats_total;
SELECT * FROM dlock_stats_total \gset before_

-- dlock_cleanup deletes idle rows; their counters stay in the totals, and
-- an expired unreleased lease it deletes is counted lost.
SELECT dlock_acquire('st/gone', '10 ms') IS NOT NULL AS took;
SELECT pg_sleep(0.05);
SELECT dlock_cleanup('0', 100) AS deleted;
SELECT name FROM dlock_stats ORDER BY name;
SELECT acquisitions = :before_acquisitions + 1 AS acquisitions_kept,
	   releases = :before_releases AS releases_kept,
	   renewals = :before_renewals AS renewals_kept,
	   lost = :before_lost + 1 AS lost_counted,
	   waits = :before_waits AS waits_kept
  FROM dlock_stats_total;
SELECT acquisitions, releases, renewals, lost FROM dlock_stats_retired;

-- A name reset alone: its counters go to the totals, which do not go down.
SELECT dlock_stats_reset('st/o');
SELECT acquisitions, owner_renewals, stats_reset IS NOT NULL AS reset_known
  FROM dlock_stats WHERE name = 'st/o';
SELECT acquisitions = :before_acquisitions + 1 AS acquisitions_kept,
	   owner_renewals = :before_owner_renewals AS owner_renewals_kept
  FROM dlock_stats_total;

-- Resetting everything zeroes names, totals and shared counters.
SELECT dlock_stats_reset(NULL);
SELECT acquisitions, owner_renewals, renewals, releases, takeovers, lost,
	   busy IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 0 END) AS busy_ok,
	   waits, wait_time, wait_time_max,
	   fence_refusals IS NOT DISTINCT FROM (CASE WHEN :'shared'::bool THEN 0 END) AS refusals_ok,
	   stats_reset IS NOT NULL AS reset_known
  FROM dlock_stats_total;
SELECT count(*) AS nonzero_names FROM dlock_stats
 WHERE acquisitions + owner_renewals + renewals + releases + takeovers + lost + waits > 0
	OR stats_reset IS NULL;

-- Who may reset: not PUBLIC; every role sees every name's counters.
CREATE ROLE regress_dlock_stats_app;
SET ROLE regress_dlock_stats_app;
SELECT count(*) AS visible_names FROM dlock_stats;
SELECT count(*) AS total_rows FROM dlock_stats_total;
SELECT dlock_stats_reset();
RESET ROLE;
SELECT dlock_stats_reset('');
DROP ROLE regress_dlock_stats_app;
