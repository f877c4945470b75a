-- Copyright (c) 2026, the dlock developers
--
-- SQL edition: a token counter whose settings could repeat a token or make
-- one go down is refused (55000) as in the C edition (src/token.c,
-- TokenCheckCounter; test/t/008_token_history.pl), and nothing is handed
-- out; once the settings are restored, tokens go on above every earlier one.
-- The SQL edition also refuses an INCREMENT above 1.
\set SHOW_CONTEXT never
\set VERBOSITY default
SET search_path = dlock, public;
SET ROLE alice;
SELECT dlock_acquire('counter-base', '1 min') AS base \gset
RESET ROLE;
ALTER SEQUENCE dlock_token_seq CACHE 2;
SET ROLE alice;
SELECT dlock_acquire('counter-x', '1 min');
RESET ROLE;
-- dlock_rebase() is refused too.
SELECT dlock_rebase();
ALTER SEQUENCE dlock_token_seq CACHE 1;
ALTER SEQUENCE dlock_token_seq CYCLE;
SET ROLE alice;
SELECT dlock_acquire('counter-x', '1 min');
RESET ROLE;
ALTER SEQUENCE dlock_token_seq NO CYCLE;
ALTER SEQUENCE dlock_token_seq INCREMENT 2;
SET ROLE alice;
SELECT dlock_acquire('counter-x', '1 min');
RESET ROLE;
ALTER SEQUENCE dlock_token_seq INCREMENT 1;
ALTER SEQUENCE dlock_token_seq INCREMENT -1 MINVALUE -10;
SET ROLE alice;
SELECT dlock_acquire('counter-x', '1 min');
RESET ROLE;
ALTER SEQUENCE dlock_token_seq INCREMENT 1 MINVALUE 1;
ALTER SEQUENCE dlock_token_seq MAXVALUE 9000000000000000000;
SET ROLE alice;
SELECT dlock_acquire('counter-x', '1 min');
RESET ROLE;
ALTER SEQUENCE dlock_token_seq NO MAXVALUE;
-- Nothing was handed out while refused.
SELECT count(*) AS refused_leases FROM dlock_lease WHERE name = 'counter-x';
-- Restored: tokens go on, above every earlier one.
SET ROLE alice;
SELECT dlock_acquire('counter-x', '1 min') > :base AS above;
RESET ROLE;
DELETE FROM dlock_expiry WHERE name LIKE 'counter-%';
DELETE FROM dlock_lease WHERE name LIKE 'counter-%';
DELETE FROM dlock_sql_queue WHERE name LIKE 'counter-%';
