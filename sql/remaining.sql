-- Copyright (c) 2026, the dlock developers
--
-- dlock_remaining(name, token): the time left on a lease its token holds,
-- NULL otherwise; the argument errors of the other functions; the holder
-- role rule of dlock_check; no lock kept.  Tokens and times vary, so they
-- are compared, never printed.
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;

-- Bad arguments: the SQLSTATEs of the other functions.
SELECT dlock_remaining(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_remaining('x', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_remaining('', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_remaining(repeat('x', 256), 1);
\echo :LAST_ERROR_SQLSTATE
-- 255 bytes is a valid name (never acquired: NULL).
SELECT dlock_remaining(repeat('x', 255), 1) IS NULL AS longest_name_unknown;

-- A name never acquired: NULL.
SELECT dlock_remaining('rem', 1) IS NULL AS never_acquired;

-- Held: the time left, at most the ttl; the result is an interval.
SELECT dlock_acquire('rem', '60 s') AS t1 \gset
SELECT dlock_remaining('rem', :t1) BETWEEN '55 s' AND '60 s' AS about_a_minute,
       pg_typeof(dlock_remaining('rem', :t1)) AS result_type;
-- It goes down with the server clock, also within one transaction.
BEGIN;
SELECT dlock_remaining('rem', :t1) AS r1 \gset
SELECT pg_sleep(0.05);
SELECT dlock_remaining('rem', :t1) < :'r1'::interval AS goes_down_in_a_transaction;
COMMIT;
-- Any other token: NULL, lower or higher.
SELECT dlock_remaining('rem', :t1 - 1) IS NULL AS lower_token,
       dlock_remaining('rem', :t1 + 1) IS NULL AS higher_token;
-- It agrees with the lease's expiry.
SELECT abs(extract(epoch FROM dlock_remaining('rem', :t1) -
                              (expires_at - clock_timestamp()))) < 1 AS agrees_with_expires_at
  FROM dlock_leases WHERE name = 'rem';

-- Renewed: the new time left; an owner renewal keeps the token.
SELECT dlock_renew('rem', :t1, '1 hour') AS renewed;
SELECT dlock_remaining('rem', :t1) BETWEEN '55 min' AND '1 hour' AS about_an_hour;
SELECT dlock_acquire('own', '10 s', owner => 'me') AS t2 \gset
SELECT dlock_acquire('own', '2 hours', owner => 'me') = :t2 AS owner_renewal;
SELECT dlock_remaining('own', :t2) BETWEEN '1 hour 55 min' AND '2 hours' AS about_two_hours;

-- Released: NULL.
SELECT dlock_release('rem', :t1) AS released;
SELECT dlock_remaining('rem', :t1) IS NULL AS after_release;

-- Expired: NULL, even before anybody takes it over.
SELECT dlock_acquire('short', '100 ms') AS t3 \gset
SELECT pg_sleep(0.2);
SELECT dlock_remaining('short', :t3) IS NULL AS after_expiry;
-- Taken over: NULL for the old token, the time left for the new one.
SELECT dlock_acquire('short', '30 s') AS t4 \gset
SELECT dlock_remaining('short', :t3) IS NULL AS old_token_after_takeover,
       dlock_remaining('short', :t4) BETWEEN '25 s' AND '30 s' AS new_token;

-- No lock outlives the call, whatever the answer.
BEGIN;
SELECT dlock_remaining('short', :t4) IS NOT NULL AS held,
       dlock_remaining('short', :t3) IS NULL AS stale,
       dlock_remaining('nobody', 1) IS NULL AS unknown;
SELECT count(*) AS dlock_locks_kept FROM pg_locks
 WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;
-- A check, by contrast, keeps its lock until the transaction ends.
BEGIN;
SELECT dlock_check('short', :t4) AS checked;
SELECT count(*) AS dlock_locks_kept_by_check FROM pg_locks
 WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;

-- Read-only transactions: it changes nothing, so it works there.
BEGIN READ ONLY;
SELECT dlock_remaining('short', :t4) IS NOT NULL AS in_read_only;
ROLLBACK;

-- The holder role rule of dlock_check: another role that presents the
-- current token gets 42501; a wrong token is NULL for anybody; members of
-- the holder role and superusers get the time left.
CREATE ROLE regress_dlock_rem_holder;
CREATE ROLE regress_dlock_rem_other;
CREATE ROLE regress_dlock_rem_member IN ROLE regress_dlock_rem_holder;
SET ROLE regress_dlock_rem_holder;
SELECT dlock_acquire('roles', '1 min') AS t5 \gset
SELECT dlock_remaining('roles', :t5) IS NOT NULL AS holder_role;
SET ROLE regress_dlock_rem_other;
SELECT dlock_remaining('roles', :t5);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_check('roles', :t5);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_remaining('roles', :t5 + 1) IS NULL AS other_role_wrong_token;
SET ROLE regress_dlock_rem_member;
SELECT dlock_remaining('roles', :t5) IS NOT NULL AS member_role;
RESET ROLE;
SELECT dlock_remaining('roles', :t5) IS NOT NULL AS superuser;
SET ROLE regress_dlock_rem_holder;
SELECT dlock_release('roles', :t5) AS released;
RESET ROLE;
DROP ROLE regress_dlock_rem_member;
DROP ROLE regress_dlock_rem_other;
DROP ROLE regress_dlock_rem_holder;
