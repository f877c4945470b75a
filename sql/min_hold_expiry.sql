-- Copyright (c) 2026, the dlock developers
--
-- The minimum hold (issue 27 item 2) also holds after an expiry (a10 F7):
-- a renewal or an owner renewal with a short ttl lets the lease expire
-- before acquired_at + min_hold, and the name stays unavailable until then,
-- to everybody; dlock_leases.available_at says when.  Tokens vary:
-- compared, never printed.
--
DROP EXTENSION IF EXISTS dlock;
CREATE EXTENSION dlock;

-- A renewal with a short ttl.
SELECT dlock_acquire('mh/renew', '1 min', min_hold => '1 min') AS t \gset
SELECT dlock_renew('mh/renew', :t, '100 ms') AS renewed;
-- An owner renewal with a short ttl.
SELECT dlock_acquire('mh/owner', '1 min', owner => 'pod-1', min_hold => '1 min') AS o \gset
SELECT dlock_acquire('mh/owner', '100 ms', owner => 'pod-1') = :o AS same_token;
SELECT pg_sleep(0.3);

SELECT name, held, available_at = acquired_at + min_hold AS available_after_hold
  FROM dlock_leases WHERE name LIKE 'mh/%' ORDER BY name;
SELECT dlock_acquire('mh/renew', '10 s') IS NULL AS busy;
SELECT dlock_acquire('mh/owner', '10 s', owner => 'pod-2') IS NULL AS busy;
-- The stale token is refused, as after any expiry.
SELECT dlock_renew('mh/renew', :t, '10 s') AS renewed;
-- A revoke still skips the minimum hold.
SELECT revoked_token = :t AS revoked FROM dlock_revoke('mh/renew');
SELECT dlock_acquire('mh/renew', '10 s') > :t AS taken_after_revoke;

-- A lease that expires after its minimum hold: the lock-delay rules alone.
SELECT dlock_acquire('mh/short', '100 ms', min_hold => '50 ms', lock_delay => '0') AS s \gset
SELECT pg_sleep(0.2);
SELECT available_at = expires_at AS available_at_expiry
  FROM dlock_leases WHERE name = 'mh/short';
SELECT dlock_acquire('mh/short', '10 s') > :s AS taken;
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
