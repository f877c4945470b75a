-- Copyright (c) 2026, the dlock developers
--
-- dlock_import(state, replace => true) replaces lease rows that carry
-- counters: their counters stay in dlock_stats_total, which never goes
-- down but by dlock_stats_reset() (a10 F9: Prometheus reads a drop as a
-- counter reset), and a replaced lease that expired without a release is
-- counted lost, as dlock_cleanup counts it.
--
DROP EXTENSION IF EXISTS dlock;
CREATE EXTENSION dlock;
SELECT dlock_stats_reset();

-- A lease acquired, renewed and released; one owner's, renewed by acquire;
-- one taken over by a waiting acquire, whose lease then expired without a
-- release.
SELECT dlock_acquire('si/a', '1 min') AS a \gset
SELECT dlock_renew('si/a', :a, '1 min') AS renewed;
SELECT dlock_release('si/a', :a) AS released;
SELECT dlock_acquire('si/o', '1 min', owner => 'pod-1') AS o \gset
SELECT dlock_acquire('si/o', '1 min', owner => 'pod-1') = :o AS same_token;
SELECT dlock_release('si/o', :o) AS released;
SELECT dlock_acquire('si/e', '100 ms') IS NOT NULL AS took;
SELECT dlock_acquire('si/e', '10 ms', wait => '10 s') IS NOT NULL AS took_over;
SELECT pg_sleep(0.05);
SELECT acquisitions, owner_renewals, renewals, releases, takeovers, lost, waits,
	   wait_time > 0 AS waited
  FROM dlock_stats_total;
SELECT * FROM dlock_stats_total \gset before_

-- The export of another database, as a move brings it (here: of this
-- one, with its leases renamed).
SELECT replace(dlock_export()::text, '"si/', '"moved/')::jsonb AS state \gset
SELECT dlock_import(:'state', replace => true) AS imported;

-- The imported rows count from 0; the replaced rows' counters are in the
-- totals, and si/e's expiry, which nobody released, is lost.
SELECT name, acquisitions, owner_renewals, renewals, releases, takeovers, lost
  FROM dlock_stats ORDER BY name;
SELECT acquisitions = :before_acquisitions AS acquisitions_kept,
	   owner_renewals = :before_owner_renewals AS owner_renewals_kept,
	   renewals = :before_renewals AS renewals_kept,
	   releases = :before_releases AS releases_kept,
	   takeovers = :before_takeovers AS takeovers_kept,
	   lost = :before_lost + 1 AS lost_counted,
	   waits = :before_waits AS waits_kept,
	   abs(wait_time - :before_wait_time) < 1e-6 AS wait_time_kept,
	   wait_time_max = :before_wait_time_max AS wait_time_max_kept
  FROM dlock_stats_total;

-- A second import over those rows (of a new export: the first import
-- raised the counter above the old one's tokens, which are refused now):
-- moved/e, whose loss this database has not counted yet (its row came
-- with the import), is written back as it was, so it is not counted now,
-- but once, when the row is seen next: here by a cleanup (attack5 F5).
SELECT * FROM dlock_stats_total \gset before_
SELECT dlock_export() AS state \gset
SELECT dlock_import(:'state', replace => true) AS imported;
SELECT acquisitions = :before_acquisitions AS acquisitions_kept,
	   releases = :before_releases AS releases_kept,
	   lost = :before_lost AS lost_not_yet
  FROM dlock_stats_total;
SELECT dlock_cleanup('0', 100) AS deleted;
SELECT lost = :before_lost + 1 AS lost_counted_once FROM dlock_stats_total;

-- A reset of everything still zeroes the totals.
SELECT dlock_stats_reset();
SELECT acquisitions, owner_renewals, renewals, releases, takeovers, lost, waits
  FROM dlock_stats_total;
