-- Copyright (c) 2026, the dlock developers
--
-- Every bad input of the contract in the SQL edition: the C edition's
-- SQLSTATE (sql/errors.sql has the same inputs), and nothing changed.
-- Messages differ from the C edition's only as docs/editions.md lists.
\set SHOW_CONTEXT never
SET search_path = dlock, public;
SET ROLE alice;
SELECT dlock_acquire('e-held', '1 hour') AS held_token \gset
RESET ROLE;
-- A fingerprint of all state: the tables and the token counter.
CREATE TEMP VIEW state AS
  SELECT (SELECT md5(string_agg(format('%s|%s|%s|%s|%s|%s', l.name, l.token, l.owner, l.role,
                                       e.expires_at, e.released_at), ',' ORDER BY l.name))
            FROM dlock_lease l JOIN dlock_expiry e USING (name)) AS leases,
         (SELECT last_value FROM dlock_token_seq) AS last_token,
         (SELECT count(*) FROM dlock_sql_queue) AS queues;
CREATE TEMP TABLE before AS SELECT * FROM state;
SET ROLE alice;
-- NULL name, token, ttl or wait: 22004.
SELECT dlock_acquire(NULL, '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('x', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('x', '1 min', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_release(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_release('e-held', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew(NULL, 1, '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew('e-held', NULL, '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew('e-held', :held_token, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_check(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_check('e-held', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_assert(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_assert('e-held', NULL);
\echo :LAST_ERROR_SQLSTATE

-- A NULL owner is not an error: it means an anonymous holder.
SELECT dlock_acquire('e-held', '1 min', '0', NULL) IS NULL AS anonymous_and_busy;

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
SELECT dlock_renew('e-held', :held_token, '-3000000 days 72000000:00:01');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew('e-held', :held_token, '0');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew('e-held', :held_token, '2 days');
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

-- at_least of dlock_rebase, max_rows and older_than of dlock_cleanup.
RESET ROLE;
SET ROLE dlock_owner;
SELECT dlock_rebase(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_cleanup(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_cleanup('-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_cleanup('1 s', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_cleanup('1 s', 0);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE alice;
-- A read-only transaction refuses every call that locks or writes: 25006.
BEGIN READ ONLY;
SELECT dlock_acquire('x', '1 min');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT dlock_release('e-held', :held_token);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT dlock_renew('e-held', :held_token, '1 min');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT dlock_assert('e-held', :held_token);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
RESET ROLE;
-- The errors changed nothing: same leases, same token counter.
SELECT s.leases = b.leases AS leases_unchanged, s.last_token = b.last_token AS no_token_burnt,
       s.queues = b.queues AS no_queue
  FROM state s, before b;
SET ROLE alice;
SELECT dlock_check('e-held', :held_token) AS still_held;
SELECT dlock_release('e-held', :held_token) AS released;
RESET ROLE;
