-- Copyright (c) 2026, the dlock developers
--
-- dlock_stats_reset writes no lease row (a12 finding 1): it records each
-- row's counters in dlock_stats_base, which the views subtract.  A lease
-- row keeps its version (xmin) through a reset; the counters count from
-- the reset; dlock_cleanup and dlock_import(replace => true) move a row's
-- counters less its baseline to the totals and drop the baseline, so the
-- totals neither go down nor count twice.
DROP EXTENSION IF EXISTS dlock;
CREATE EXTENSION dlock;
SELECT dlock_acquire('bl/a', '1 min') AS a \gset
SELECT dlock_acquire('bl/b', '1 min') AS b \gset
SELECT dlock_renew('bl/a', :a, '1 min') AS renewed;
SELECT xmin AS a_xmin FROM dlock_lease WHERE name = 'bl/a' \gset
SELECT dlock_stats_reset();
SELECT xmin = :'a_xmin' AS reset_wrote_no_lease_row FROM dlock_lease WHERE name = 'bl/a';
SELECT name, acquisitions, renewals, releases, stats_reset IS NOT NULL AS reset
  FROM dlock_stats ORDER BY name;
SELECT acquisitions, renewals, releases FROM dlock_stats_total;
-- After the reset: counted from it.
SELECT dlock_renew('bl/a', :a, '1 min') AS renewed;
SELECT dlock_release('bl/a', :a) AS released;
SELECT name, acquisitions, renewals, releases FROM dlock_stats ORDER BY name;
-- One name reset alone: its counts move to the totals, which stay.
SELECT xmin AS a_xmin FROM dlock_lease WHERE name = 'bl/a' \gset
SELECT dlock_stats_reset('bl/a');
SELECT xmin = :'a_xmin' AS reset_wrote_no_lease_row FROM dlock_lease WHERE name = 'bl/a';
SELECT name, acquisitions, renewals, releases FROM dlock_stats ORDER BY name;
SELECT acquisitions, renewals, releases FROM dlock_stats_total;
-- A cleanup deletes bl/a and its baseline; the totals stay.
SELECT dlock_cleanup('0', 100) AS deleted;
SELECT name FROM dlock_stats_base ORDER BY name;
SELECT acquisitions, renewals, releases FROM dlock_stats_total;
-- A new row of the name counts from 0, not against the old baseline.
SELECT dlock_acquire('bl/a', '1 min') AS a2 \gset
SELECT name, acquisitions, renewals, releases FROM dlock_stats ORDER BY name;
SELECT acquisitions, renewals, releases FROM dlock_stats_total;
-- An import over the rows (none held) keeps the totals and drops the baselines.
SELECT dlock_release('bl/a', :a2) AS released;
SELECT dlock_release('bl/b', :b) AS released;
SELECT dlock_stats_reset('bl/b');
SELECT dlock_export() AS state \gset
SELECT dlock_import(:'state', replace => true) AS imported;
SELECT count(*) AS baselines FROM dlock_stats_base;
SELECT acquisitions, renewals, releases FROM dlock_stats_total;
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
