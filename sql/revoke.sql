-- Copyright (c) 2026, the dlock developers
--
-- dlock_revoke (issue 27 item 4): argument errors (nothing changed), who
-- may call it, and what a revoke leaves in dlock_leases.  The waits for
-- check protection are in test/specs/revoke.spec.  Tokens vary: compared,
-- never printed.
--
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE EXTENSION dlock;

SELECT dlock_acquire('rv', '1 min') AS t \gset
-- Bad arguments: 22004 for NULL name, wait or force, 22023 for the rest.
SELECT * FROM dlock_revoke(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM dlock_revoke('');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM dlock_revoke(repeat('x', 256));
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM dlock_revoke('rv', wait => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM dlock_revoke('rv', wait => '-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM dlock_revoke('rv', force => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT held FROM dlock_leases WHERE name = 'rv';

-- Not for PUBLIC: an application role needs a GRANT.
CREATE ROLE dlock_revoke_app;
SET ROLE dlock_revoke_app;
SELECT * FROM dlock_revoke('rv');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT EXECUTE ON FUNCTION dlock_revoke(text, bigint, interval, boolean) TO dlock_revoke_app;
SET ROLE dlock_revoke_app;
SELECT revoked_token = :t AS revoked, waited_for, ended FROM dlock_revoke('rv');
RESET ROLE;

-- Released now, whatever it had; the token is stale for renew and release.
SELECT held, released_at IS NOT NULL AS released, available_at = released_at AS available_now
  FROM dlock_leases WHERE name = 'rv';
SELECT dlock_renew('rv', :t, '1 min') AS renewed, dlock_release('rv', :t) AS released;
SELECT dlock_acquire('rv', '1 min') > :t AS greater;
DROP OWNED BY dlock_revoke_app;
DROP ROLE dlock_revoke_app;
