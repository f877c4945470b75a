-- Copyright (c) 2026, the dlock developers
--
-- Every bad input of the contract: its SQLSTATE, and nothing changed.
-- After each error, psql's LAST_ERROR_SQLSTATE is echoed.
--
\set SHOW_CONTEXT never
-- A fresh counter, so that the tokens in messages below are always the same.
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
-- Tokens count from 1, as in 1.0: pin the token epoch to this history at
-- floor 0, so that no first draw jumps to the clock (docs/tokens.md).
INSERT INTO dlock_epoch
SELECT 0, c.system_identifier,
       ('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::int,
       d.oid, pg_relation_filenode('dlock_token_seq'), clock_timestamp(), 'test'
  FROM pg_control_system() AS c, pg_database AS d
 WHERE d.datname = current_database();
SELECT dlock_acquire('held', '1 hour') AS held_token \gset
SELECT dlock_acquire('released', '1 hour') AS rel_token \gset
SELECT dlock_release('released', :rel_token);
SELECT dlock_acquire('expiring', '100 ms') AS exp_token \gset

-- A fingerprint of all state: the table and the token counter.
CREATE TEMP VIEW state AS
  SELECT (SELECT md5(string_agg(format('%s|%s|%s|%s|%s|%s', name, token, owner, role,
                                       expires_at, released_at), ',' ORDER BY name))
            FROM dlock_lease) AS leases,
         (SELECT last_value FROM dlock_token_seq) AS last_token;
CREATE TEMP TABLE before AS SELECT * FROM state;

-- NULL name, token, ttl or wait: 22004.
SELECT dlock_acquire(NULL, '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('x', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('x', '1 min', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_release(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_release('held', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew(NULL, 1, '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew('held', NULL, '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew('held', :held_token, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_check(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_check('held', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_assert(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_assert('held', NULL);
\echo :LAST_ERROR_SQLSTATE

-- A NULL owner is not an error: it means an anonymous holder.
SELECT dlock_acquire('held', '1 min', '0', NULL) IS NULL AS anonymous_and_busy;

-- Empty name, name over 255 bytes: 22023.
SELECT dlock_acquire('', '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire(repeat('x', 256), '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire(repeat('é', 128), '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_release('', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew(repeat('x', 256), 1, '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_check('', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_assert(repeat('x', 1000), 1);
\echo :LAST_ERROR_SQLSTATE

-- ttl <= 0, above dlock.max_ttl, or out of any range: 22023.
SELECT dlock_acquire('x', '0');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('x', '-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('x', '1 mon -30 days');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('x', '1 day 1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('x', '178000000 years');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('x', '-178000000 years');
\echo :LAST_ERROR_SQLSTATE
-- Parts that nearly cancel but cannot be added to the clock: out of range.
SELECT dlock_acquire('x', '5965232 years 4 months -2147483640 days');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew('held', :held_token, '-3000000 days 72000000:00:01');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew('held', :held_token, '0');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew('held', :held_token, '2 days');
\echo :LAST_ERROR_SQLSTATE

-- wait < 0: 22023 (huge waits are cut to a century, not an error).
SELECT dlock_acquire('x', '1 min', '-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('x', '1 min', '-1 mon');
\echo :LAST_ERROR_SQLSTATE

-- Owners: empty or over 255 bytes: 22023.
SELECT dlock_acquire('x', '1 min', '0', '');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('x', '1 min', '0', repeat('o', 256));
\echo :LAST_ERROR_SQLSTATE

-- Stale token in dlock_assert: LK001, saying why.
SELECT dlock_assert('held', :held_token + 1000);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_assert('released', :rel_token);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_assert('never-acquired', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_assert('held', :held_token - 1);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_sleep(0.3);
SELECT dlock_assert('expiring', :exp_token);
\echo :LAST_ERROR_SQLSTATE

-- A read-only transaction (as on a hot standby) refuses changes: 25006.
BEGIN READ ONLY;
SELECT dlock_acquire('x', '1 min');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT dlock_release('held', :held_token);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT dlock_renew('held', :held_token, '1 min');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- ... but a check changes nothing and works there.
BEGIN READ ONLY;
SELECT dlock_check('held', :held_token) AS check_in_read_only;
ROLLBACK;

-- The errors changed nothing: same leases, same token counter.
SELECT s.leases = b.leases AS leases_unchanged, s.last_token = b.last_token AS no_token_burnt
  FROM state s, before b;
SELECT dlock_check('held', :held_token) AS still_held;
