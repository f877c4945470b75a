-- Copyright (c) 2026, the dlock developers
--
-- The SQL edition's API (issue 26): what each call answers, as whom, and
-- what it leaves behind.  Run by test/sql_edition/run.sh as a superuser in
-- a database where dlock_owner (not a superuser) installed the edition into
-- schema dlock and pg_control_system() is revoked from PUBLIC.  Tokens are
-- never printed (they meet the clock): they are compared.
\set SHOW_CONTEXT never
SET search_path = dlock, public;
-- The reason of an LK001, without the message (which names the token).
CREATE FUNCTION public.stale_detail(name text, token int8) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text;
BEGIN
	PERFORM dlock.dlock_assert(name, token);
	RETURN 'no error';
EXCEPTION WHEN SQLSTATE 'LK001' THEN
	GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
	RETURN 'LK001: ' || d;
END $$;
SELECT dlock_edition();
SELECT c.relname, pg_get_userbyid(c.relowner) AS owner
  FROM pg_class c WHERE c.relnamespace = 'dlock'::regnamespace AND c.relkind IN ('r', 'S', 'v')
 ORDER BY 1;

SET ROLE alice;
SELECT dlock_acquire('job', '1 min') AS t1 \gset
-- Held: busy for others and for a second anonymous acquire.
SELECT dlock_acquire('job', '1 min') IS NULL AS busy;
SELECT dlock_check('job', :t1) AS checked, dlock_check('job', :t1 + 1) AS wrong_token;
SELECT dlock_remaining('job', :t1) BETWEEN '59 s' AND '60 s' AS remaining;
SELECT dlock_renew('job', :t1, '2 min') AS renewed,
       dlock_remaining('job', :t1) > '1 min' AS longer;
-- The first token of a history meets the clock (the floor jumps).
SELECT :t1 > (extract(epoch FROM now()) * 1e6)::int8 - 60000000 AS token_at_clock;
SELECT name, owner, token = :t1 AS token_shown, held, role, released_at IS NULL AS unreleased
  FROM dlock_leases;
RESET ROLE;

-- Another role: no token in the view, 42501 with the right token.
SET ROLE bob;
SELECT name, token IS NULL AS token_hidden, held, role FROM dlock_leases;
SELECT dlock_release('job', :t1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_renew('job', :t1, '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_check('job', :t1);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_remaining('job', :t1);
\echo :LAST_ERROR_SQLSTATE
-- A wrong token is just false: nothing to deny.
SELECT dlock_check('job', :t1 + 1) AS other_token, dlock_release('job', :t1 + 1) AS not_released;
-- Tables and internal functions are closed.
SELECT count(*) FROM dlock_lease;
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_sql_draw(0, ROW(NULL::int8, NULL::int8, NULL::oid, NULL::oid));
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_rebase();
\echo :LAST_ERROR_SQLSTATE
UPDATE dlock_sql_settings SET max_ttl = 10;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- Owner renewal: same owner keeps its token; another owner is busy.
SET ROLE alice;
SELECT dlock_acquire('leader', '1 min', '0', 'a') AS l1 \gset
SELECT dlock_acquire('leader', '1 min', '0', 'a') = :l1 AS same_token,
       dlock_acquire('leader', '1 min', '0', 'b') IS NULL AS other_owner_busy;
RESET ROLE;
SET ROLE bob;
SELECT dlock_acquire('leader', '1 min', '0', 'a') IS NULL AS other_role_same_owner_busy;
RESET ROLE;

-- assert: LK001 with the reason; a declaration follows savepoints.
SET ROLE alice;
BEGIN;
SELECT dlock_assert('job', :t1);
SELECT dlock_sql_declared('job') = :t1 AS declared;
SAVEPOINT s;
SELECT dlock_assert('leader', :l1);
SELECT dlock_sql_declared('leader') = :l1 AS declared_in_savepoint;
ROLLBACK TO SAVEPOINT s;
SELECT dlock_sql_declared('leader') IS NULL AS forgotten, dlock_sql_declared('job') = :t1 AS kept;
COMMIT;
SELECT dlock_sql_declared('job') IS NULL AS gone_after_commit;
SELECT dlock_assert('never', 1);
\echo :LAST_ERROR_SQLSTATE

-- Release: true once, then false; the next acquire has a greater token.
SELECT dlock_release('job', :t1) AS released, dlock_release('job', :t1) AS again;
SELECT dlock_check('job', :t1) AS checked_after_release;
SELECT public.stale_detail('job', :t1);
SELECT dlock_acquire('job', '1 min') AS t2 \gset
SELECT :t2 > :t1 AS greater;
-- Expiry: an expired lease is never renewed, and is free.
SELECT dlock_acquire('short', '100 ms') AS s1 \gset
SELECT pg_sleep(0.2);
SELECT dlock_renew('short', :s1, '1 min') AS renewed_expired, dlock_check('short', :s1) AS checked_expired;
SELECT public.stale_detail('short', :s1);
SELECT public.stale_detail('short', :s1 + 1);
SELECT public.stale_detail('short', :s1 - 1);
SELECT dlock_acquire('short', '1 min') > :s1 AS taken_again;
RESET ROLE;

-- Tokens are unique over all names and rise.
SELECT count(*) = count(DISTINCT token) AS unique_tokens FROM dlock_lease;

-- PREPARE TRANSACTION is refused after a call (0A000).
SET ROLE alice;
BEGIN;
SELECT dlock_check('job', :t2);
PREPARE TRANSACTION 'p';
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SELECT dlock_acquire('prep', '1 min') IS NOT NULL AS acquired;
PREPARE TRANSACTION 'p';
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM dlock_leases WHERE name = 'prep';

-- An acquire makes its commit synchronous; a later SET defeats it.
BEGIN;
SET LOCAL synchronous_commit = off;
SELECT dlock_acquire('sync', '1 min') IS NOT NULL AS acquired;
SHOW synchronous_commit;
COMMIT;
-- A busy acquire does not.
BEGIN;
SET LOCAL synchronous_commit = off;
SELECT dlock_acquire('sync', '1 min') IS NULL AS busy;
SHOW synchronous_commit;
COMMIT;

-- Who the caller is: the session's role, also inside another role's
-- SECURITY DEFINER function (docs/editions.md).
RESET ROLE;
CREATE FUNCTION public.bob_checks(t int8) RETURNS bool LANGUAGE sql SECURITY DEFINER
	SET search_path = pg_catalog AS $$SELECT dlock.dlock_check('job', t)$$;
ALTER FUNCTION public.bob_checks(int8) OWNER TO bob;
SET ROLE alice;
SELECT public.bob_checks(:t2) AS checked_as_alice;
BEGIN;
SET LOCAL ROLE bob;
SELECT dlock_check('job', :t2);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
RESET ROLE;
DROP FUNCTION public.bob_checks(int8);

-- Read-only transactions: 25006 for every call but dlock_remaining.
SET ROLE alice;
BEGIN READ ONLY;
SELECT dlock_check('job', :t2);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT dlock_remaining('job', :t2) > '0' AS remaining_in_read_only;
ROLLBACK;
RESET ROLE;

-- Events: the C edition's payload.
SELECT dlock_sql_event_payload('job', 'acquired', 42, NULL);
SELECT dlock_sql_event_payload(E'a "quoted"\n\\name', 'taken_over', 43, 'w1');

-- dlock_rebase: the owner only; later tokens above at_least.
SET ROLE dlock_owner;
SELECT dlock_rebase(4611686018427387905);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_rebase(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_rebase(:t2 + 1000000000) > :t2 + 1000000000 AS floor_above;
RESET ROLE;
SET ROLE alice;
SELECT dlock_acquire('after-rebase', '1 min') > :t2 + 1000000000 AS above_at_least;
RESET ROLE;
SELECT reason FROM dlock_epoch WHERE reason <> 'clock' ORDER BY floor;

-- Cleanup: only idle rows, only by the owner.
SET ROLE alice;
SELECT dlock_cleanup();
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE alice;
SELECT dlock_release('job', :t2) AS released;
RESET ROLE;
SET ROLE dlock_owner;
SELECT dlock_cleanup('0', 1000) AS deleted;
SELECT name FROM dlock_leases ORDER BY name;
RESET ROLE;
DROP FUNCTION public.stale_detail(text, int8);

-- The caller under SET ROLE, SET LOCAL ROLE and RESET ROLE.
CREATE ROLE carol;
SET ROLE carol;
SELECT dlock_sql_caller() = 'carol'::regrole AS carol;
RESET ROLE;
BEGIN;
SET LOCAL ROLE carol;
SELECT dlock_sql_caller() = 'carol'::regrole AS carol_local;
COMMIT;
SELECT dlock_sql_caller() = (SELECT oid FROM pg_roles WHERE rolname = session_user) AS session_user_again;
DROP ROLE carol;

-- Settings: the owner changes them with UPDATE; every session sees it.
SET ROLE dlock_owner;
UPDATE dlock_sql_settings SET max_ttl = 10;
RESET ROLE;
SET ROLE alice;
SELECT dlock_acquire('settings', '11 s');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('settings', '10 s') IS NOT NULL AS within_max;
-- Released, so that no later test (sql_stats' cleanup) finds it expired.
SELECT dlock_release('settings', token) AS released FROM dlock_leases WHERE name = 'settings';
RESET ROLE;
SET ROLE dlock_owner;
UPDATE dlock_sql_settings SET max_ttl = 86400;
UPDATE dlock_sql_settings SET poll_interval = '0';
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
