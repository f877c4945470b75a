-- Copyright (c) 2026, the dlock developers
--
-- dlock_stats.waits (issue 27 item 1) counts the acquires that had to
-- wait (a10 F12): an acquire with a wait that finds the name free is no
-- wait.  (Acquires that did wait: sql/stats.sql.)
--
DROP EXTENSION IF EXISTS dlock;
CREATE EXTENSION dlock;
SELECT dlock_acquire('sw/a', '1 min', wait => '5 s') AS a \gset
SELECT dlock_release('sw/a', :a) AS released;
SELECT dlock_acquire('sw/a', '1 min', wait => '5 s') > :a AS again;
SELECT acquisitions, waits, wait_time = 0 AS no_wait_time
  FROM dlock_stats WHERE name = 'sw/a';
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
