-- Copyright (c) 2026, the dlock developers
--
-- Minimum hold and lock-delay (issue 27 items 5 and 6): argument errors
-- (22023, nothing changed), what is stored with the lease, and
-- dlock_cleanup leaving a row alone while its name is unavailable.
-- Tokens and times vary, so they are compared, never printed.
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;

-- min_hold: longer than the ttl, negative: 22023.
SELECT dlock_acquire('d', '10 s', min_hold => '11 s');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('d', '10 s', min_hold => '-1 s');
\echo :LAST_ERROR_SQLSTATE
-- lock_delay: above dlock.max_ttl, negative: 22023; also from the setting.
SELECT dlock_acquire('d', '10 s', lock_delay => '86401 s');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('d', '10 s', lock_delay => '-1 s');
\echo :LAST_ERROR_SQLSTATE
SET dlock.lock_delay = '86401s';
SELECT dlock_acquire('d', '10 s');
\echo :LAST_ERROR_SQLSTATE
RESET dlock.lock_delay;
-- None of them wrote anything.
SELECT count(*) AS rows FROM dlock_lease;

-- Stored with the lease: a min_hold equal to the ttl is allowed; zero is
-- none; a renewal replaces the lock-delay and keeps the minimum hold.
SELECT dlock_acquire('d', '10 s', min_hold => '10 s', lock_delay => '5 s') AS t \gset
SELECT min_hold, lock_delay, available_at FROM dlock_leases WHERE name = 'd';
SELECT dlock_renew('d', :t, '10 s', lock_delay => '2 s') AS renewed;
SELECT dlock_renew('d', :t, '10 s', lock_delay => '-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT min_hold, lock_delay FROM dlock_leases WHERE name = 'd';
SELECT dlock_acquire('z', '10 s', min_hold => '0', lock_delay => '0') AS z \gset
SELECT min_hold, lock_delay FROM dlock_leases WHERE name = 'z';

-- Released inside its minimum hold: dlock_cleanup leaves the row, whose
-- hold would otherwise be forgotten; the row of 'z' goes.
SELECT dlock_release('d', :t) AS released, dlock_release('z', :z) AS released_z;
SELECT available_at = acquired_at + min_hold AS at_min_hold
  FROM dlock_leases WHERE name = 'd';
SELECT dlock_cleanup('0', 100) AS deleted;
SELECT name FROM dlock_leases ORDER BY name;
