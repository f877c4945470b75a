-- Copyright (c) 2026, the dlock developers
--
-- dlock_rebase(at_least) refuses a floor above 2^62 with 22023, nothing
-- changed: one near the counter's maximum was accepted, and every
-- acquisition after it failed (review 2, finding 5).
\set SHOW_CONTEXT never
SELECT last_value AS before FROM dlock_token_seq \gset
SELECT dlock_rebase(9223372036854775806);
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_rebase(4611686018427387905);
\echo :LAST_ERROR_SQLSTATE
SELECT last_value = :before AS counter_unchanged FROM dlock_token_seq;
-- 2^62 itself is accepted, and acquisitions go on above it.
SELECT dlock_rebase(4611686018427387904) >= 4611686018427387904 AS rebased;
SELECT dlock_acquire('rebase/top', '1 hour') > 4611686018427387904 AS above;
-- A fresh counter for whatever runs next.
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
