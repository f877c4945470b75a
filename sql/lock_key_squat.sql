-- Copyright (c) 2026, the dlock developers
--
-- A table called dlock_lock_key that another role made in the extension's
-- schema (public is writable by everyone on PostgreSQL 14): the update to
-- 1.2 and CREATE EXTENSION fail with a message naming its owner and what to
-- do, nothing changed (review 2, finding 6).
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE ROLE dlock_squatter;
GRANT CREATE ON SCHEMA public TO dlock_squatter;
SET ROLE dlock_squatter;
CREATE TABLE public.dlock_lock_key (scheme int4, secret bytea);
RESET ROLE;
CREATE EXTENSION dlock VERSION '1.1';
ALTER EXTENSION dlock UPDATE;
\echo :LAST_ERROR_SQLSTATE
SELECT extversion FROM pg_extension WHERE extname = 'dlock';
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS dlock_installed FROM pg_extension WHERE extname = 'dlock';
-- Once it is gone, both work.
DROP TABLE public.dlock_lock_key;
CREATE EXTENSION dlock VERSION '1.1';
ALTER EXTENSION dlock UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'dlock';
REVOKE CREATE ON SCHEMA public FROM dlock_squatter;
DROP ROLE dlock_squatter;
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
