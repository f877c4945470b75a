-- Copyright (c) 2026, the dlock developers
--
-- dlock_revoke's bad input in the SQL edition (issue 27 item 4): a NULL
-- name, wait or force 22004, other bad input 22023 (the C edition's
-- messages), nothing changed; PUBLIC may not call
-- it (42501); a revoke of a name that was never acquired, or of a token
-- that does not hold the name, does nothing.
\set SHOW_CONTEXT never
SET search_path = dlock, public;
SET ROLE alice;
SELECT dlock_acquire('ra-held', '1 min') AS held_token \gset
SELECT * FROM dlock_revoke('ra-held');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT * FROM dlock_revoke(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM dlock_revoke('');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM dlock_revoke('ra-held', wait => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM dlock_revoke('ra-held', wait => '-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM dlock_revoke('ra-held', force => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT held FROM dlock_leases WHERE name = 'ra-held';
SELECT * FROM dlock_revoke('ra-never');
SELECT * FROM dlock_revoke('ra-held', :held_token + 1);
SELECT held FROM dlock_leases WHERE name = 'ra-held';
SELECT revoked_token = :held_token AS revoked, waited_for, ended FROM dlock_revoke('ra-held', :held_token, '0');
SELECT held, released_at IS NOT NULL AS released FROM dlock_leases WHERE name = 'ra-held';
-- Nothing left to revoke: released, no minimum hold.
SELECT * FROM dlock_revoke('ra-held');
